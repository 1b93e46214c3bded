package compose

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/skidata/skidata/adapters/redact"
)

// A Profile is a named set of defaults for one way of deploying the
// service. It sits between the built-in defaults and the environment:
// flag > SKI_ variable > profile > built-in default, so every setting a
// profile chooses can still be overridden.
type Profile struct {
	// Defaults maps a flag name to the value the profile gives it.
	Defaults map[string]string
	// FromEnv maps a flag name to a non-SKI_ variable the platform already
	// sets (AMQP_URL, AWS_REGION): when that variable is set it is the
	// profile's value for the flag, still below --flag and SKI_ variables.
	FromEnv map[string]string
}

// Profiles are the deployment profiles --profile / SKI_PROFILE accept.
var Profiles = map[string]Profile{
	// ec2 is the AWS layout of docs/operations.md: API and consumer
	// instances sharing an Amazon SQS ride queue (the stack's default;
	// SKI_QUEUE=rabbitmq, the stack's Amazon MQ choice, takes the broker
	// from AMQP_URL), rides in DynamoDB (sharded model), credentials from
	// the instance role, JSON logs for the journal and CloudWatch. The
	// role comes from SKI_ROLE. Build asks the instance metadata service
	// for the region, SQS's as DynamoDB's, when nothing else gives it.
	//
	// SQS takes nothing else from the platform: no variable names a queue
	// by convention, as AMQP_URL names a broker, and the stack writes
	// SKI_SQS_QUEUE, a SKI_ variable, which is above any profile value; an
	// endpoint other than AWS's is the SDK's own AWS_ENDPOINT_URL_SQS.
	"ec2": {
		Defaults: map[string]string{
			"store":      "dynamo-sharded",
			"queue":      "sqs",
			"log-format": "json",
			// The demo resorts do not belong in a production resort
			// table: `skiapi seed --profile ec2` loads them on purpose.
			"seed-demo": "false",
			// The load balancer is the only way in, and appends the
			// client's address to X-Forwarded-For.
			"trust-forwarded-for": "true",
			// The load balancer reaches the API, and Prometheus every
			// instance's /metrics, over the instance's own address.
			"listen": ":8080",
		},
		FromEnv: map[string]string{
			"amqp-url":      "AMQP_URL",
			"dynamo-region": "AWS_REGION",
		},
	},
}

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(Profiles))
	for n := range Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Sources says where each flag's effective value came from: "flag",
// "env SKI_X", "profile ec2", "profile ec2 via AMQP_URL" or "default".
type Sources map[string]string

// ParseConfigSources parses args, then fills what the command line left
// unset from the environment (lookup), then from the profile that the flags
// or environment name; it returns the configuration, where each value came
// from, and the first error.
func ParseConfigSources(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) (Config, Sources, error) {
	c := DefaultConfig()
	c.RegisterFlags(fs)
	src := Sources{}
	if err := fs.Parse(args); err != nil {
		return c, src, err
	}
	fs.Visit(func(f *flag.Flag) { src[f.Name] = "flag" })
	if err := ApplyEnv(fs, lookup); err != nil {
		return c, src, err
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := src[f.Name]; ok {
			return
		}
		if _, ok := lookup(EnvName(f.Name)); ok {
			src[f.Name] = "env " + EnvName(f.Name)
		}
	})
	if c.Profile != "" {
		p, ok := Profiles[c.Profile]
		if !ok {
			return c, src, fmt.Errorf("--profile %q is not one of %s", c.Profile, strings.Join(ProfileNames(), ", "))
		}
		if err := p.apply(fs, src, c.Profile, lookup); err != nil {
			return c, src, err
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := src[f.Name]; !ok {
			src[f.Name] = "default"
		}
	})
	return c, src, c.Validate()
}

// apply sets every flag neither the command line nor a SKI_ variable set
// to the profile's value.
func (p Profile) apply(fs *flag.FlagSet, src Sources, name string, lookup func(string) (string, bool)) error {
	set := func(flagName, value, source string) error {
		if _, taken := src[flagName]; taken {
			return nil
		}
		if err := fs.Set(flagName, value); err != nil {
			return fmt.Errorf("profile %s: --%s %q: %w", name, flagName, value, err)
		}
		src[flagName] = source
		return nil
	}
	for _, f := range sortedKeys(p.FromEnv) {
		if v, ok := lookup(p.FromEnv[f]); ok && v != "" {
			if err := set(f, v, "profile "+name+" via "+p.FromEnv[f]); err != nil {
				return err
			}
		}
	}
	for _, f := range sortedKeys(p.Defaults) {
		if err := set(f, p.Defaults[f], "profile "+name); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MaskSecrets masks any password in a flag's value before it is printed.
// A list of AMQP URLs (--amqp-url for a cluster) is masked URL by URL:
// redact.Secrets masks by whitespace-separated word, and would take the
// list for one URL, masking the hosts between the first ':' and the last
// '@' along with the passwords.
func MaskSecrets(value string) string {
	return redact.Secrets(amqpListComma.ReplaceAllString(value, ", $1"))
}

// amqpListComma is a comma that starts another AMQP URL.
var amqpListComma = regexp.MustCompile(`,\s*(amqps?://)`)

// EffectiveConfig lists every flag as `name = value (source)`, one a line,
// in flag order, with secrets masked: what `skiapi config` prints.
func EffectiveConfig(fs *flag.FlagSet, src Sources) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(&b, "%s = %s (%s)\n", f.Name, MaskSecrets(f.Value.String()), src[f.Name])
	})
	return b.String()
}
