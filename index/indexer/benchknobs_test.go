package indexer

import (
	"go/ast"
	gobuild "go/build"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// TestBenchKnobsNotExported: the package as a program builds it (without
// -tags icebloom_bench) exports none of the bench's knobs. It reads the
// files that build compiles (go/build decides by their constraints) and
// fails if Knobs or WithKnobs is declared in them (benchknobs.go lost its
// tag), or if a program could set a knob through Options: as an exported
// field of Options, promoted from a struct Options embeds, or as a field of
// the struct type of an exported field.
func TestBenchKnobsNotExported(t *testing.T) {
	bctx := gobuild.Default
	bctx.BuildTags = nil
	pkg, err := bctx.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pkg.IgnoredGoFiles, "benchknobs.go") {
		t.Errorf("benchknobs.go is built without -tags icebloom_bench (ignored files: %v)", pkg.IgnoredGoFiles)
	}
	fset := token.NewFileSet()
	structs := map[string]*ast.StructType{}
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name == "WithKnobs" {
					t.Errorf("%s: WithKnobs is declared without the tag", fset.Position(d.Pos()))
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if ts.Name.Name == "Knobs" {
						t.Errorf("%s: Knobs is declared without the tag", fset.Position(ts.Pos()))
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						structs[ts.Name.Name] = st
					}
				}
			}
		}
	}
	if structs["Options"] == nil {
		t.Fatal("no struct type Options in the package's files")
	}
	knobNames := []string{"DisablePrefetch", "ForcePrefetch", "ExactColumns", "DisableDictionaryShortcut"}
	seen := map[string]bool{}
	var walk func(typeName, path string)
	walk = func(typeName, path string) {
		st := structs[typeName]
		if st == nil || seen[typeName] {
			return
		}
		seen[typeName] = true
		for _, field := range st.Fields.List {
			typ := field.Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			local, _ := typ.(*ast.Ident) // a type of this package, or a predeclared one
			if len(field.Names) == 0 && local != nil {
				walk(local.Name, path) // embedded: its fields are promoted
			}
			for _, n := range field.Names {
				if !n.IsExported() {
					continue
				}
				if slices.Contains(knobNames, n.Name) {
					t.Errorf("%s: %s.%s is exported without the tag", fset.Position(n.Pos()), path, n.Name)
				}
				if local != nil {
					walk(local.Name, path+"."+n.Name)
				}
			}
		}
	}
	walk("Options", "Options")
}
