package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// CompletionCmd is `icebloom completion bash|zsh|fish`: a script completing
// icebloom's commands, flags, the values of flags that take one of a few
// (--output, --format, --log-level, --catalog, …) and table names (from
// `icebloom list --names`, with the global flags typed so far), written from
// the same struct tags go-arg parses (go-arg itself has no completion).
type CompletionCmd struct {
	Shell string `arg:"positional,required" placeholder:"SHELL" help:"bash, zsh or fish; load it with: source <(icebloom completion bash), or icebloom completion fish | source"`
}

// completionShells are the shells completion writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func (c *CompletionCmd) validate() error {
	if !slices.Contains(completionShells, c.Shell) {
		return fmt.Errorf("completion %q: want bash, zsh or fish", c.Shell)
	}
	return nil
}

// flagValues are the values of the flags that take one of a few.
var flagValues = map[string][]string{
	"--output":      {"text", "json"},
	"--log-level":   {"debug", "info", "warn", "error"},
	"--catalog":     {"sql", "rest", "glue", "hive", "hadoop"},
	"--format":      scanFormats,
	"--sql-driver":  {"sqliteshim", "pgx"},
	"--sql-dialect": {"sqlite", "postgres"},
}

func (c *CompletionCmd) run(_ context.Context, e *env) error {
	global, commands := commandFlags()
	var script string
	switch c.Shell {
	case "bash":
		script = bashCompletion(global, commands)
	case "zsh":
		script = zshCompletion(global, commands)
	case "fish":
		script = fishCompletion(global, commands)
	}
	_, err := fmt.Fprint(e.stdout, script)
	return err
}

// shellCases writes a shell case statement's branches: for each command
// the words offered once it is known (its flags, and for completion its
// shells), then the global flags and the commands for none; each branch
// sets variable v.
func shellCases(b *strings.Builder, indent, v string, global []flagSpec, commands []commandSpec) {
	for _, cmd := range commands {
		words := append(flagNames(cmd.flags), "--help")
		if cmd.name == "completion" {
			words = append(words, completionShells...)
		}
		fmt.Fprintf(b, "%s%s) %s=%q ;;\n", indent, cmd.name, v, strings.Join(words, " "))
	}
	names := make([]string, len(commands))
	for i, cmd := range commands {
		names[i] = cmd.name
	}
	fmt.Fprintf(b, "%s*) %s=%q ;;\n", indent, v, strings.Join(append(append(flagNames(global), "--help"), names...), " "))
}

// valueCases writes a shell case statement's branches on the previous
// word: a flag of flagValues sets v to its values; any other flag that
// takes a value sets v to "-" (a file name, or nothing to offer).
func valueCases(b *strings.Builder, indent, v string, global []flagSpec, commands []commandSpec) {
	var open []string
	seen := map[string]bool{}
	for _, f := range allFlags(global, commands) {
		if !f.value || seen[f.name] {
			continue
		}
		seen[f.name] = true
		if values, ok := flagValues[f.name]; ok {
			fmt.Fprintf(b, "%s%s) %s=%q ;;\n", indent, f.name, v, strings.Join(values, " "))
		} else {
			open = append(open, f.name)
		}
	}
	fmt.Fprintf(b, "%s%s) %s=- ;;\n", indent, strings.Join(open, "|"), v)
}

// tableCommands is the pattern of the commands whose positional
// arguments are tables.
func tableCommands(commands []commandSpec) string {
	var names []string
	for _, cmd := range commands {
		if cmd.tables {
			names = append(names, cmd.name)
		}
	}
	return strings.Join(names, "|")
}

func bashCompletion(global []flagSpec, commands []commandSpec) string {
	var b strings.Builder
	b.WriteString("# bash completion of icebloom: source <(icebloom completion bash)\n")
	b.WriteString("_icebloom() {\n\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" cmd=\"\" at=0 words=\"\" i\n")
	b.WriteString("\tfor ((i = 1; i < COMP_CWORD; i++)); do\n")
	fmt.Fprintf(&b, "\t\tcase \"${COMP_WORDS[i]}\" in\n\t\t%s) cmd=\"${COMP_WORDS[i]}\"; at=$i; break ;;\n\t\tesac\n\tdone\n", commandPattern(commands))
	b.WriteString("\t# The value of the flag before the cursor.\n\tcase \"$prev\" in\n")
	valueCases(&b, "\t", "words", global, commands)
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ $words == - ]]; then COMPREPLY=(); return; fi # a file name: -o default\n")
	b.WriteString("\tif [[ -z $words && $cur != -* ]]; then\n\t\tcase \"$cmd\" in\n")
	fmt.Fprintf(&b, "\t\t%s) words=$(icebloom \"${COMP_WORDS[@]:1:at-1}\" list --names 2>/dev/null) ;;\n\t\tesac\n\tfi\n", tableCommands(commands))
	b.WriteString("\tif [[ -z $words ]]; then\n\t\tcase \"$cmd\" in\n")
	shellCases(&b, "\t\t", "words", global, commands)
	b.WriteString("\t\tesac\n\tfi\n\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n")
	b.WriteString("complete -o default -F _icebloom icebloom\n")
	return b.String()
}

func zshCompletion(global []flagSpec, commands []commandSpec) string {
	var b strings.Builder
	b.WriteString("#compdef icebloom\n# zsh completion of icebloom: source <(icebloom completion zsh), or save as _icebloom in $fpath\n")
	// zsh's own $words is the command line: the candidates are $cands.
	b.WriteString("_icebloom() {\n\tlocal cmd=\"\" at=0 cands=\"\" i\n")
	b.WriteString("\tfor ((i = 2; i < CURRENT; i++)); do\n")
	fmt.Fprintf(&b, "\t\tcase \"${words[i]}\" in\n\t\t%s) cmd=\"${words[i]}\"; at=$i; break ;;\n\t\tesac\n\tdone\n", commandPattern(commands))
	b.WriteString("\tcase \"${words[CURRENT-1]}\" in\n")
	valueCases(&b, "\t", "cands", global, commands)
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ $cands == - ]]; then _files; return; fi\n")
	b.WriteString("\tif [[ -n $cands ]]; then compadd -- ${=cands}; return; fi\n")
	b.WriteString("\tif [[ ${words[CURRENT]} != -* ]]; then\n\t\tcase \"$cmd\" in\n")
	fmt.Fprintf(&b, "\t\t%s) compadd -- ${(f)\"$(icebloom ${words[2,at-1]} list --names 2>/dev/null)\"}; return ;;\n\t\tesac\n\tfi\n", tableCommands(commands))
	b.WriteString("\tcase \"$cmd\" in\n")
	shellCases(&b, "\t", "cands", global, commands)
	b.WriteString("\tesac\n\tcompadd -- ${=cands}\n}\n")
	b.WriteString("if [ \"$funcstack[1]\" = \"_icebloom\" ]; then _icebloom \"$@\"; else compdef _icebloom icebloom; fi\n")
	return b.String()
}

func fishCompletion(global []flagSpec, commands []commandSpec) string {
	var b strings.Builder
	names := make([]string, len(commands))
	for i, cmd := range commands {
		names[i] = cmd.name
	}
	all := strings.Join(names, " ")
	b.WriteString("# fish completion of icebloom: icebloom completion fish | source, or save as ~/.config/fish/completions/icebloom.fish\n")
	b.WriteString("complete -c icebloom -f\n")
	// The tables, listed with the global flags typed before the command.
	b.WriteString("function __icebloom_tables\n\tset -l global\n\tfor t in (commandline -opc)[2..-1]\n")
	fmt.Fprintf(&b, "\t\tif contains -- $t %s\n\t\t\tbreak\n\t\tend\n\t\tset -a global $t\n\tend\n", all)
	b.WriteString("\ticebloom $global list --names 2>/dev/null\nend\n")
	flag := func(cond string, f flagSpec) {
		fmt.Fprintf(&b, "complete -c icebloom -n %q -l %s", cond, strings.TrimPrefix(f.name, "--"))
		if values, ok := flagValues[f.name]; ok {
			fmt.Fprintf(&b, " -x -a %q", strings.Join(values, " "))
		} else if f.value {
			b.WriteString(" -r -F")
		}
		if f.help != "" {
			fmt.Fprintf(&b, " -d %q", firstClause(f.help))
		}
		b.WriteString("\n")
	}
	for _, f := range global {
		flag("true", f)
	}
	for _, cmd := range commands {
		fmt.Fprintf(&b, "complete -c icebloom -n %q -a %s -d %q\n", "__fish_use_subcommand", cmd.name, firstClause(cmd.help))
		seen := "__fish_seen_subcommand_from " + cmd.name
		for _, f := range cmd.flags {
			flag(seen, f)
		}
		switch {
		case cmd.name == "completion":
			fmt.Fprintf(&b, "complete -c icebloom -n %q -a %q\n", seen, strings.Join(completionShells, " "))
		case cmd.tables:
			fmt.Fprintf(&b, "complete -c icebloom -n %q -a '(__icebloom_tables)'\n", seen)
		}
	}
	return b.String()
}

// firstClause is a help text up to its first ; or [, for a one-line
// description.
func firstClause(help string) string {
	if i := strings.IndexAny(help, ";["); i > 0 {
		help = help[:i]
	}
	return strings.TrimSpace(help)
}

// commandPattern is the shell pattern of every command name.
func commandPattern(commands []commandSpec) string {
	names := make([]string, len(commands))
	for i, cmd := range commands {
		names[i] = cmd.name
	}
	return strings.Join(names, "|")
}

// commandSpec is a subcommand, its flags, and whether its positional
// arguments are tables.
type commandSpec struct {
	name   string
	help   string
	flags  []flagSpec
	tables bool
}

// flagSpec is a --flag: its name, whether it takes a value, its help.
type flagSpec struct {
	name  string
	value bool
	help  string
}

// flagNames are the names of flags.
func flagNames(flags []flagSpec) []string {
	names := make([]string, len(flags))
	for i, f := range flags {
		names[i] = f.name
	}
	return names
}

// allFlags are the global flags, then every command's.
func allFlags(global []flagSpec, commands []commandSpec) []flagSpec {
	all := slices.Clone(global)
	for _, cmd := range commands {
		all = append(all, cmd.flags...)
	}
	return all
}

// commandFlags returns the global flags and each subcommand's flags, read
// from the struct tags of Args as go-arg reads them.
func commandFlags() (global []flagSpec, commands []commandSpec) {
	t := reflect.TypeFor[Args]()
	global = structFlags(t)
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := strings.CutPrefix(f.Tag.Get("arg"), "subcommand:"); ok {
			cmd := f.Type.Elem()
			tables := false
			for _, field := range reflect.VisibleFields(cmd) {
				if (field.Name == "Table" || field.Name == "Tables") && strings.Contains(field.Tag.Get("arg"), "positional") {
					tables = true
				}
			}
			commands = append(commands, commandSpec{name: name, help: f.Tag.Get("help"), flags: structFlags(cmd), tables: tables})
		}
	}
	return global, commands
}

// structFlags lists the --flags of a go-arg struct, its embedded structs'
// included.
func structFlags(t reflect.Type) []flagSpec {
	var flags []flagSpec
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		typ := f.Type
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		for part := range strings.SplitSeq(f.Tag.Get("arg"), ",") {
			if strings.HasPrefix(part, "--") {
				flags = append(flags, flagSpec{name: part, value: typ.Kind() != reflect.Bool, help: f.Tag.Get("help")})
			}
		}
	}
	return flags
}
