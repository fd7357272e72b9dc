package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems"
)

// commandLine is the command line's grammar: the commands, each declaring
// its own flags, and where the parsed values land. The server is the
// default command, so its flags work with or without "serve" in front.
type commandLine struct {
	app               *kingpin.Application
	serve, safeToStop *kingpin.CmdClause
	serveFlags        flags
	stopFlags         *safeToStopFlags
	// commands are the systems' own commands (systems.Commands), by
	// name, with what runs each.
	commands map[string]system.Runner
}

func newCommandLine(stdout, stderr io.Writer) *commandLine {
	app := kingpin.New(exporterName, systems.Summary)
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.UsageTemplate(usageTemplate)
	app.UsageFuncs(map[string]any{"withDefaultCommandFlags": withDefaultCommandFlags})

	cl := &commandLine{app: app, commands: map[string]system.Runner{}}
	cl.serve = app.Command("serve", "Serve metrics (the default).").Default()
	defineServeFlags(cl.serve, &cl.serveFlags)
	for _, c := range commands {
		cl.commands[c.Name] = c.Define(app)
	}
	cl.safeToStop, cl.stopFlags = defineSafeToStop(app, budgetSystems())
	return cl
}

// parseCommandLine parses args and returns the command to run, with its
// settings in the returned commandLine.
func parseCommandLine(args []string, stdout, stderr io.Writer) (*commandLine, string, error) {
	cl := newCommandLine(stdout, stderr)
	cmd, err := cl.app.Parse(args)
	if reordered, ok := commandFirst(cl.app, args, err); ok {
		// A failed parse has set some values already: parse afresh.
		args = reordered
		cl = newCommandLine(stdout, stderr)
		cmd, err = cl.app.Parse(args)
	}
	if err != nil {
		return nil, "", explainParseError(cl.app, args, err)
	}
	return cl, cmd, nil
}

// commandFirst moves a command written after flags to the front, as in
// "--redis.addr=HOST:PORT slot KEY", which worked while every flag was the
// application's. kingpin takes the flag for the default command's and then
// finds the command name where no argument is expected. The name is moved
// only when it is there once; a flag then given to the wrong command is
// refused by the parse that follows, naming it.
func commandFirst(app *kingpin.Application, args []string, err error) ([]string, bool) {
	if err == nil {
		return nil, false
	}
	name, ok := strings.CutPrefix(err.Error(), "unexpected ")
	if !ok || commandNamed(app.Model(), name) == nil {
		return nil, false
	}
	i := slices.Index(args, name)
	if i <= 0 || slices.Index(args[i+1:], name) >= 0 {
		return nil, false
	}
	return slices.Concat([]string{name}, args[:i], args[i+1:]), true
}

// commandNamed is the top-level command called name, or nil.
func commandNamed(app *kingpin.ApplicationModel, name string) *kingpin.CmdModel {
	for _, cmd := range app.Commands {
		if cmd.Name == name {
			return cmd
		}
	}
	return nil
}

// usageTemplate is kingpin's with one change: the help of the bare command
// line, which runs the default command, lists that command's flags after
// the application's, as it did while they were the application's.
var usageTemplate = strings.NewReplacer(
	"{{if .Context.Flags -}}\nFlags:\n{{.Context.Flags|FlagsToTwoColumns|FormatTwoColumns}}",
	"{{$flags := .Context.Flags}}{{if not .Context.SelectedCommand}}{{$flags = withDefaultCommandFlags .App}}{{end -}}\n"+
		"{{if $flags -}}\nFlags:\n{{$flags|FlagsToTwoColumns|FormatTwoColumns}}",
).Replace(kingpin.DefaultUsageTemplate)

// withDefaultCommandFlags are app's flags and then the default command's.
func withDefaultCommandFlags(app *kingpin.ApplicationModel) []*kingpin.FlagModel {
	flags := slices.Clone(app.Flags)
	for _, cmd := range app.Commands {
		if cmd.Default {
			flags = append(flags, cmd.Flags...)
		}
	}
	return flags
}

// explainParseError adds what kingpin leaves out: which flag a switch
// given a value is ("unexpected true"), and which command takes a flag
// given to another ("unknown long flag").
func explainParseError(app *kingpin.Application, args []string, err error) error {
	model := app.Model()
	if flag, ok := strings.CutPrefix(err.Error(), "unknown long flag '--"); ok {
		return unknownFlagError(app, model, args, strings.TrimSuffix(flag, "'"), err)
	}
	value, ok := strings.CutPrefix(err.Error(), "unexpected ")
	if !ok {
		return err
	}
	if commandNamed(model, value) != nil {
		return fmt.Errorf("%w: write the command before the flags: %s %s [<flags>]", err, exporterName, value)
	}
	for _, arg := range args {
		name, v, hasValue := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !hasValue || v != value || !strings.HasPrefix(arg, "--") {
			continue
		}
		for _, fm := range allFlags(model) {
			if fm.Name == name && fm.IsBoolFlag() {
				return fmt.Errorf("--%s takes no value: write --%s to turn it on, or leave it out", name, name)
			}
		}
	}
	return err
}

// unknownFlagError names the commands that take a flag given to another,
// such as a server flag given to safe-to-stop.
func unknownFlagError(app *kingpin.Application, model *kingpin.ApplicationModel, args []string, name string, err error) error {
	var owners []string
	for _, cmd := range model.Commands {
		for _, fm := range cmd.Flags {
			if fm.Name == name || "no-"+fm.Name == name && fm.IsBoolFlag() {
				owners = append(owners, commandTitle(cmd))
			}
		}
	}
	if len(owners) == 0 {
		return err
	}
	// The parse stopped at the flag, in the command it was given to.
	given := "the server"
	if ctx, _ := app.ParseContext(args); ctx != nil && ctx.SelectedCommand != nil && !ctx.SelectedCommand.Model().Default {
		given = ctx.SelectedCommand.FullCommand()
	}
	return fmt.Errorf("%w: it is a flag of %s, not of %s", err, strings.Join(owners, " and of "), given)
}

// commandTitle names a command as the user would run it.
func commandTitle(cmd *kingpin.CmdModel) string {
	if cmd.Default {
		return fmt.Sprintf("the server (%s, or %s %s)", exporterName, exporterName, cmd.FullCommand)
	}
	return exporterName + " " + cmd.FullCommand
}

// allFlags are the flags of the application and of every command.
func allFlags(model *kingpin.ApplicationModel) []*kingpin.FlagModel {
	all := slices.Clone(model.Flags)
	for _, cmd := range model.Commands {
		all = append(all, cmd.Flags...)
	}
	return all
}
