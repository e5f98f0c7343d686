package graphserver_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPublicSurface keeps the root package's API (what go doc shows an
// application) in the shape issue 19 settled: no exported variable a caller
// could modify except the sentinel errors (lists of accepted values stay
// unexported), and one naming scheme for defaults (XDefault, never
// DefaultX).
func TestPublicSurface(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	pkg := pkgs["graphserver"]
	require.NotNil(t, pkg, "the root package parses")
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for _, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					pos := fset.Position(n.Pos())
					if gd.Tok == token.VAR {
						require.True(t, strings.HasPrefix(n.Name, "Err"), "%s: exported variable %s can be changed by any caller: make it unexported, or a function", pos, n.Name)
					}
					require.False(t, strings.HasPrefix(n.Name, "Default"), "%s: %s: name defaults XDefault", pos, n.Name)
				}
			}
		}
	}
}
