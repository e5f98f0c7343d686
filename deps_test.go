package graphserver_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRootImports guards the dependency direction: the root package (the
// domain) imports no HTTP, no SQL and no graphserver subpackage; those
// import it.
func TestRootImports(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for dep := range strings.FieldsSeq(string(out)) {
		switch {
		case dep == "net/http", dep == "database/sql",
			strings.HasPrefix(dep, "github.com/graphserver/graphserver/"):
			t.Errorf("the root package must not depend on %s", dep)
		}
	}
	require.Contains(t, string(out), "github.com/graphserver/graphserver\n", "go list listed the root package")
}
