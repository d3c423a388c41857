package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/icebloom/icebloom/cmd/icebloom/internal/rowformat"
	"github.com/icebloom/icebloom/cmd/internal/cli"
)

// printJSON writes v as one indented JSON object.
func (e *env) printJSON(v any) error {
	return cli.PrintJSON(e.stdout, v)
}

// printf writes text output.
func (e *env) printf(format string, args ...any) {
	fmt.Fprintf(e.stdout, format, args...)
}

// plural counts a noun for text output: "1 file", "2 files", "0 files",
// "3 entries". The plural is made by English's regular rules (-s; -es after
// s, x, z, ch, sh; -ies after a consonant's y) unless given as many, for
// the nouns the rules get wrong and for phrases that end in something
// else ("segment holds", "segments hold").
func plural[N ~int | ~int32 | ~int64](n N, one string, many ...string) string {
	noun := one
	if n != 1 {
		if len(many) > 0 {
			noun = many[0]
		} else {
			noun = pluralOf(one)
		}
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun
}

// pluralOf is the regular plural of an English noun (or of a phrase's last
// word).
func pluralOf(noun string) string {
	switch {
	case noun == "":
		return noun
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "z"),
		strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case len(noun) >= 2 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// dataFiles is cli.DataFiles under the name lookup.go and scan.go call it
// by.
var dataFiles = cli.DataFiles

// floatsText lists floats as text output prints them: "0.01, 0.05".
func floatsText(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = rowformat.FloatText(f, 64)
	}
	return strings.Join(parts, ", ")
}
