package filescan

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// TestBenchReadNotExported: the package as a program builds it (without
// -tags icebloom_bench) exports none of the reading the bench's floor uses
// (benchread.go): go/doc, reading the files that build compiles, documents
// no ChunkReader, NewChunkReader or ReaderProperties. It fails if one of
// them is exported again or benchread.go loses its tag.
func TestBenchReadNotExported(t *testing.T) {
	bctx := build.Default
	bctx.BuildTags = nil
	bp, err := bctx.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, bp.ImportPath)
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, f := range p.Funcs {
		exported = append(exported, f.Name)
	}
	for _, typ := range p.Types {
		exported = append(exported, typ.Name)
		for _, f := range typ.Funcs { // constructors: NewChunkReader would be one
			exported = append(exported, f.Name)
		}
	}
	for _, v := range slices.Concat(p.Vars, p.Consts) {
		exported = append(exported, v.Names...)
	}
	if !slices.Contains(exported, "ReadFiles") || !slices.Contains(exported, "NewScanner") {
		t.Fatalf("the package's exported names lack ReadFiles or NewScanner: %v", exported)
	}
	for _, name := range []string{"ChunkReader", "NewChunkReader", "ReaderProperties"} {
		if slices.Contains(exported, name) {
			t.Errorf("%s is exported without -tags icebloom_bench", name)
		}
	}
}
