package graphserver_test

import (
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goBlock matches a fenced ```go block of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestREADMECompiles compiles every complete program (a ```go block
// starting with "package") of README.md, as a user copying it would: each is
// written to a directory inside the module (named with "_", so ./... never
// sees it) and checked with go vet, which type-checks it against the
// current API. The Embedding section must hold one.
func TestREADMECompiles(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, embedding, ok := strings.Cut(string(readme), "\n## Embedding\n")
	require.True(t, ok, "README.md has no Embedding section")
	embedding, _, _ = strings.Cut(embedding, "\n## ")
	require.Contains(t, embedding, "go get github.com/graphserver/graphserver", "the Embedding section says how to install")
	require.Regexp(t, "```go\npackage main\n", embedding, "the Embedding section holds a complete program")

	goTool, err := exec.LookPath("go")
	if r := os.Getenv("GOROOT"); err != nil && r != "" {
		goTool, err = filepath.Join(r, "bin", "go"), nil
	}
	require.NoError(t, err, "this test runs the go command: put it in PATH")
	programs := 0
	for i, m := range goBlock.FindAllStringSubmatch(string(readme), -1) {
		src := m[1]
		if !strings.HasPrefix(src, "package ") {
			continue // a fragment
		}
		programs++
		formatted, err := format.Source([]byte(src))
		require.NoError(t, err, "README.md Go block %d", i+1)
		require.Equal(t, string(formatted), src, "README.md Go block %d is not gofmt-formatted", i+1)
		dir, err := os.MkdirTemp(".", "_readme")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
		out, err := exec.CommandContext(t.Context(), goTool, "vet", "./"+filepath.Base(dir)).CombinedOutput()
		require.NoError(t, err, "README.md Go block %d does not compile:\n%s\n%s", i+1, out, src)
	}
	require.Positive(t, programs)
}
