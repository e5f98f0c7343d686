package graphserver_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRootImports guards the dependency direction: the root package (the
// domain) imports no HTTP, no SQL and no graphserver subpackage but the
// driver contract (driver) and the types it shares with the root (record);
// those two import nothing of graphserver's but record; the other
// subpackages import the root.
func TestRootImports(t *testing.T) {
	t.Parallel()
	allowed := map[string][]string{
		".":        {"github.com/graphserver/graphserver/driver", "github.com/graphserver/graphserver/record"},
		"./driver": {"github.com/graphserver/graphserver/record"},
		"./record": nil,
	}
	for pkg, ok := range allowed {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg).Output()
		require.NoError(t, err)
		self := "github.com/graphserver/graphserver" + strings.TrimPrefix(pkg, ".")
		for dep := range strings.FieldsSeq(string(out)) {
			switch {
			case dep == self, slices.Contains(ok, dep):
			case dep == "net/http", dep == "database/sql",
				strings.HasPrefix(dep, "github.com/graphserver/graphserver"):
				t.Errorf("package %s must not depend on %s", self, dep)
			}
		}
		require.Contains(t, string(out), self+"\n", "go list listed %s", self)
	}
}
