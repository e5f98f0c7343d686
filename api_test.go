package graphserver_test

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/gocomments"
)

// TestPublicSurface keeps the root package's API (what go doc shows an
// application) in the shape issues 19 and 14 settled: no exported variable a
// caller could modify except the sentinel errors (lists of accepted values
// stay unexported), one naming scheme for defaults (XDefault, never
// DefaultX), and none of the storage-driver contract (package driver): no
// type of that name and no alias of a driver type, so the root shows what an
// application uses, not what a driver implements.
func TestPublicSurface(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	parse := func(dir, name string) []*ast.File {
		pkgs, err := gocomments.ParseDir(fset, dir, 0)
		require.NoError(t, err)
		files := pkgs[name]
		require.NotEmpty(t, files, "package %s parses", name)
		return files
	}
	driverTypes := map[string]bool{}
	for _, f := range parse("driver", "driver") {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, spec := range gd.Specs {
					if n := spec.(*ast.TypeSpec).Name; n.IsExported() {
						driverTypes[n.Name] = true
					}
				}
			}
		}
	}
	require.Contains(t, driverTypes, "Storage", "package driver declares the Storage contract")
	for _, f := range parse(".", "graphserver") {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() {
					pos := fset.Position(ts.Pos())
					require.False(t, driverTypes[ts.Name.Name], "%s: %s is the driver contract's: it belongs in package driver, not on the root's surface", pos, ts.Name.Name)
					if sel, ok := ts.Type.(*ast.SelectorExpr); ok && ts.Assign.IsValid() {
						x, _ := sel.X.(*ast.Ident)
						require.False(t, x != nil && x.Name == "driver", "%s: %s aliases driver.%s onto the root's surface", pos, ts.Name.Name, sel.Sel.Name)
					}
				}
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
