// Package gocomments reads the doc comments of a package's exported types
// and struct fields, keyed as jsonschema.Reflector.CommentMap wants them
// ("import/path.Type" and "import/path.Type.Field"), so that httpapi's
// OpenAPI document describes schemas with the Go documentation.
package gocomments

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Extract parses the non-test Go files of the package in dir, whose import
// path is importPath, and returns the synopsis of each exported type's doc
// comment and the text of each exported field's comment (doc or line
// comment), on one line.
func Extract(dir, importPath string) (map[string]string, error) {
	fset := token.NewFileSet()
	pkgs, err := ParseDir(fset, dir, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, files := range pkgs {
		dp, err := doc.NewFromFiles(fset, files, importPath, doc.AllDecls|doc.PreserveAST)
		if err != nil {
			return nil, err
		}
		for _, t := range dp.Types {
			if !ast.IsExported(t.Name) {
				continue
			}
			if s := oneLine(dp.Synopsis(t.Doc)); s != "" {
				out[importPath+"."+t.Name] = s
			}
			for _, spec := range t.Decl.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, f := range st.Fields.List {
					text := f.Doc.Text()
					if text == "" {
						text = f.Comment.Text()
					}
					if text = oneLine(text); text == "" {
						continue
					}
					for _, n := range f.Names {
						if n.IsExported() {
							out[importPath+"."+ts.Name.Name+"."+n.Name] = text
						}
					}
				}
			}
		}
	}
	return out, nil
}

// ParseDir parses the non-test Go files in dir and returns them by package
// name: what the deprecated parser.ParseDir gave for them, in file name
// order (build constraints are not looked at, as ParseDir did not).
func ParseDir(fset *token.FileSet, dir string, mode parser.Mode) (map[string][]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pkgs := map[string][]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, mode)
		if err != nil {
			return nil, err
		}
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	return pkgs, nil
}

// oneLine joins a comment's lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
