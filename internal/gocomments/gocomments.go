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
	"io/fs"
	"strings"
)

// Extract parses the non-test Go files of the package in dir, whose import
// path is importPath, and returns the synopsis of each exported type's doc
// comment and the text of each exported field's comment (doc or line
// comment), on one line.
func Extract(dir, importPath string) (map[string]string, error) {
	fset := token.NewFileSet()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, dir, notTest, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, pkg := range pkgs {
		var files []*ast.File
		for _, f := range pkg.Files {
			files = append(files, f)
		}
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

// oneLine joins a comment's lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
