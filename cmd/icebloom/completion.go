package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// CompletionCmd is `icebloom completion bash|zsh`: a script completing
// icebloom's commands and flags, written from the same struct tags go-arg
// parses (go-arg itself has no completion).
type CompletionCmd struct {
	Shell string `arg:"positional,required" placeholder:"SHELL" help:"bash or zsh; load it with: source <(icebloom completion bash)"`
}

func (c *CompletionCmd) validate() error {
	if c.Shell != "bash" && c.Shell != "zsh" {
		return fmt.Errorf("completion %q: want bash or zsh", c.Shell)
	}
	return nil
}

func (c *CompletionCmd) run(_ context.Context, e *env) error {
	global, commands := commandFlags()
	var b strings.Builder
	names := make([]string, 0, len(commands))
	for _, cmd := range commands {
		names = append(names, cmd.name)
	}
	// The words offered once the command is known: its flags, and for
	// completion its shells.
	cases := func(indent, v string) {
		for _, cmd := range commands {
			words := append(slices.Clone(cmd.flags), "--help")
			if cmd.name == "completion" {
				words = append(words, "bash", "zsh")
			}
			fmt.Fprintf(&b, "%s%s) %s=%q ;;\n", indent, cmd.name, v, strings.Join(words, " "))
		}
		fmt.Fprintf(&b, "%s*) %s=%q ;;\n", indent, v, strings.Join(append(append(global, "--help"), names...), " "))
	}
	pattern := strings.Join(names, "|")
	switch c.Shell {
	case "bash":
		b.WriteString("# bash completion of icebloom: source <(icebloom completion bash)\n")
		b.WriteString("_icebloom() {\n\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" cmd=\"\" words i\n")
		b.WriteString("\tfor ((i = 1; i < COMP_CWORD; i++)); do\n")
		fmt.Fprintf(&b, "\t\tcase \"${COMP_WORDS[i]}\" in\n\t\t%s) cmd=\"${COMP_WORDS[i]}\"; break ;;\n\t\tesac\n\tdone\n", pattern)
		b.WriteString("\tcase \"$cmd\" in\n")
		cases("\t", "words")
		b.WriteString("\tesac\n\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n")
		b.WriteString("complete -o default -F _icebloom icebloom\n")
	case "zsh":
		b.WriteString("#compdef icebloom\n# zsh completion of icebloom: source <(icebloom completion zsh), or save as _icebloom in $fpath\n")
		// zsh's own $words is the command line: the candidates are $cands.
		b.WriteString("_icebloom() {\n\tlocal cmd=\"\" cands=\"\" i\n")
		b.WriteString("\tfor ((i = 2; i < CURRENT; i++)); do\n")
		fmt.Fprintf(&b, "\t\tcase \"${words[i]}\" in\n\t\t%s) cmd=\"${words[i]}\"; break ;;\n\t\tesac\n\tdone\n", pattern)
		b.WriteString("\tcase \"$cmd\" in\n")
		cases("\t", "cands")
		// Flags, commands and shells where they fit; else a file name
		// (the value of --where-file, --config, …).
		b.WriteString("\tesac\n\tif [[ -z $cmd || $cmd == completion || ${words[CURRENT]} == -* ]]; then\n\t\tcompadd -- ${=cands}\n\telse\n\t\t_files\n\tfi\n}\n")
		b.WriteString("if [ \"$funcstack[1]\" = \"_icebloom\" ]; then _icebloom \"$@\"; else compdef _icebloom icebloom; fi\n")
	}
	_, err := fmt.Fprint(e.stdout, b.String())
	return err
}

// commandSpec is a subcommand and its flags.
type commandSpec struct {
	name  string
	flags []string
}

// commandFlags returns the global flags and each subcommand's flags, read
// from the struct tags of Args as go-arg reads them.
func commandFlags() (global []string, commands []commandSpec) {
	t := reflect.TypeFor[Args]()
	global = structFlags(t)
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := strings.CutPrefix(f.Tag.Get("arg"), "subcommand:"); ok {
			commands = append(commands, commandSpec{name, structFlags(f.Type.Elem())})
		}
	}
	return global, commands
}

// structFlags lists the --flags of a go-arg struct, its embedded structs'
// included.
func structFlags(t reflect.Type) []string {
	var flags []string
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		for part := range strings.SplitSeq(f.Tag.Get("arg"), ",") {
			if strings.HasPrefix(part, "--") {
				flags = append(flags, part)
			}
		}
	}
	return flags
}
