package main

import (
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	sloggokit "github.com/tjhop/slog-gokit"
)

// loggers are the exporter's logger and the one handed to exporter-toolkit.
// Both write one line per event with one ts and one caller key.
type loggers struct {
	main    log.Logger
	toolkit *slog.Logger
}

func newLoggers(w io.Writer, format, lvl string) loggers {
	var out log.Logger
	if format == "json" {
		out = log.NewJSONLogger(log.NewSyncWriter(w))
	} else {
		out = log.NewLogfmtLogger(log.NewSyncWriter(w))
	}
	out = oneLineValues(out)
	out = level.NewFilter(out, level.Allow(level.ParseDefault(lvl, level.InfoValue())))
	// The slog adapter adds its own caller (the toolkit's call site) and a
	// "time" key; rename that to our ts instead of adding a second one.
	toolkit := log.LoggerFunc(func(keyvals ...any) error {
		for i := 0; i+1 < len(keyvals); i += 2 {
			if keyvals[i] == slog.TimeKey {
				keyvals[i] = "ts"
				if t, ok := keyvals[i+1].(time.Time); ok {
					keyvals[i+1] = t.UTC().Format(time.RFC3339Nano)
				}
			}
		}
		return out.Log(keyvals...)
	})
	return loggers{
		main:    log.With(out, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller),
		toolkit: slog.New(sloggokit.NewGoKitHandler(toolkit, nil)),
	}
}

// oneLineValues keeps every event on one line: errors joined from several
// nodes or brokers (errors.Join) carry newlines, which would show up as \n
// escapes inside one value.
func oneLineValues(next log.Logger) log.Logger {
	return log.LoggerFunc(func(keyvals ...any) error {
		for i := 1; i < len(keyvals); i += 2 {
			var s string
			switch v := keyvals[i].(type) {
			case error:
				s = v.Error()
			case string:
				s = v
			default:
				continue
			}
			if strings.ContainsAny(s, "\r\n") {
				keyvals[i] = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
			}
		}
		return next.Log(keyvals...)
	})
}
