package main

import (
	"bytes"
	"io"
	"reflect"
	"strings"

	"github.com/alexflint/go-arg"
)

// writeHelp writes the help of the command line p parsed: icebloom's own,
// or a subcommand's starting with what that subcommand does. go-arg (as of
// v1.6) has one description per parser, which it writes atop every
// subcommand's help; a subcommand's first line is instead its one-line
// help from Args, the same words `icebloom --help` lists it with.
func writeHelp(w io.Writer, p *arg.Parser) {
	names := p.SubcommandNames()
	if len(names) == 0 {
		p.WriteHelp(w)
		return
	}
	var b bytes.Buffer
	p.WriteHelpForSubcommand(&b, names...)
	text, _ := strings.CutPrefix(b.String(), Args{}.Description()+"\n")
	if what := subcommandHelp(names[0]); what != "" {
		io.WriteString(w, "icebloom "+names[0]+": "+what+".\n\n")
	}
	io.WriteString(w, text)
}

// subcommandHelp returns the help tag of the subcommand name in Args.
func subcommandHelp(name string) string {
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Args]()) {
		if f.Tag.Get("arg") == "subcommand:"+name {
			return f.Tag.Get("help")
		}
	}
	return ""
}
