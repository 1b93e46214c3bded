package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"

	"github.com/skidata/skidata/app/compose"
)

// The errors flag.FlagSet.Parse returns, which name a flag in single-dash
// form and suggest nothing; UsageLine rewrites them.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// flagAliases are names people reach for that mean one of ours.
var flagAliases = map[string]string{
	"port": "listen", "addr": "listen", "address": "listen", "bind": "listen", "http": "listen",
	"database": "database-url", "db": "database-url", "dsn": "database-url",
	"amqp": "amqp-url", "rabbitmq-url": "amqp-url", "redis": "redis-url", "region": "dynamo-region",
	// The group commit's flags were RabbitMQ's before they served every queue.
	"amqp-publish-batch": "publish-batch", "amqp-publish-linger": "publish-linger", "amqp-publish-linger-gap": "publish-linger-gap",
}

// usageLine turns an error from parsing flags (fs, given args) into one
// line that names the flag as it is typed (--flag), the value, and a fix
// where one is close: a flag spelled nearly right, the flag a common alias
// means, a duration missing its unit.
func usageLine(fs *flag.FlagSet, args []string, err error) string {
	msg := err.Error()
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		name := m[1]
		line := fmt.Sprintf("--%s is not a flag of skiapi", name)
		if alias, ok := flagAliases[name]; ok {
			value := valueAfter(args, name)
			if alias == "listen" && value != "" && isDigits(value) {
				value = "127.0.0.1:" + value
			}
			return line + fmt.Sprintf("; did you mean --%s %s? (skiapi --help lists the flags)", alias, value)
		}
		if close := closest(name, flagNames(fs)); close != "" {
			return line + fmt.Sprintf("; did you mean --%s? (skiapi --help lists the flags)", close)
		}
		return line + " (skiapi --help lists the flags)"
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		value, name := m[1], m[2]
		return fmt.Sprintf("--%s %q: %s", name, value, badValueHint(fs.Lookup(name), value))
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		name := m[1]
		hint := ""
		if f := fs.Lookup(name); f != nil && f.DefValue != "" {
			hint = fmt.Sprintf(" (e.g. --%s %s)", name, f.DefValue)
		}
		return fmt.Sprintf("--%s needs a value%s", name, hint)
	}
	return withHint(err)
}

// badValueHint says what kind of value the flag takes, from its default.
func badValueHint(f *flag.Flag, value string) string {
	if f == nil {
		return "not a valid value"
	}
	if _, err := time.ParseDuration(f.DefValue); err == nil && strings.ContainsAny(f.DefValue, "smhµn") {
		unit := strings.TrimLeft(f.DefValue, "0123456789.")
		if isDigits(value) {
			return fmt.Sprintf("not a duration; did you mean --%s %s%s?", f.Name, value, unit)
		}
		return fmt.Sprintf("not a duration such as %s, 2s or 1m", f.DefValue)
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			return "not true or false"
		case float64:
			return fmt.Sprintf("not a number (e.g. --%s %s)", f.Name, f.DefValue)
		}
	}
	if isDigits(strings.TrimPrefix(f.DefValue, "-")) {
		return fmt.Sprintf("not a whole number in range (e.g. --%s %s)", f.Name, f.DefValue)
	}
	return "not a valid value"
}

// valueAfter is what follows --name (or -name) in args: its value, if any.
func valueAfter(args []string, name string) string {
	for i, a := range args {
		bare := strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(bare, name+"="); ok && a != bare {
			return v
		}
		if bare == name && a != bare && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			return args[i+1]
		}
	}
	return ""
}

func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// closest is the candidate nearest to s, if it is close enough to be what
// was meant (at most a third of its letters wrong), else "".
func closest(s string, candidates []string) string {
	best, bestDist := "", len(s)/3+1
	for _, c := range candidates {
		if d := levenshtein.ComputeDistance(s, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// withHint is err's message, with the value meant suggested when err is a
// choice the configuration does not offer and a choice is close.
func withHint(err error) string {
	var ce *compose.ChoiceError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	if close := closest(ce.Value, slices.DeleteFunc(slices.Clone(ce.Allowed), func(s string) bool { return s == "" })); close != "" {
		return fmt.Sprintf("%s; did you mean %q?", err, close)
	}
	return err.Error()
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
