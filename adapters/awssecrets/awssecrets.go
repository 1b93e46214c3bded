// Package awssecrets reads a login from AWS Secrets Manager: the RabbitMQ
// broker's password, fetched at start and again when the broker refuses
// it, so that it is never written to disk and can be rotated.
package awssecrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Config names the secret and where to ask for it.
type Config struct {
	// SecretID is the secret's ARN or name.
	SecretID string
	// Region is the Secrets Manager region. Empty: the ARN's region, else
	// the SDK's default chain (AWS_REGION).
	Region string
	// Endpoint overrides the service URL, for a test server. Empty: AWS
	// (or AWS_ENDPOINT_URL_SECRETS_MANAGER, read by the SDK).
	Endpoint string
}

// Login is a user name (empty when the secret holds only a password) and
// a password. It prints with the password masked.
type Login struct {
	Username, Password string
}

// String masks the password, so a Login printed or logged by mistake does
// not show it.
func (l Login) String() string { return fmt.Sprintf("{Username:%q Password:xxxxx}", l.Username) }

// GoString masks the password under %#v too.
func (l Login) GoString() string { return l.String() }

// Secret reads one secret.
type Secret struct {
	id     string
	client *secretsmanager.Client
}

// New builds a Secrets Manager client from the default credential chain.
func New(ctx context.Context, cfg Config) (*Secret, error) {
	if strings.TrimSpace(cfg.SecretID) == "" {
		return nil, errors.New("awssecrets: the secret's ARN or name is empty")
	}
	region := cfg.Region
	if region == "" && strings.HasPrefix(cfg.SecretID, "arn:") {
		a, err := arn.Parse(cfg.SecretID)
		if err != nil {
			return nil, fmt.Errorf("awssecrets: secret %q: %w", cfg.SecretID, err)
		}
		if a.Service != "secretsmanager" {
			return nil, fmt.Errorf("awssecrets: %q is an ARN of %s, not of a Secrets Manager secret", cfg.SecretID, a.Service)
		}
		region = a.Region
	}
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("awssecrets: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("awssecrets: secret %q: region missing: give the secret's ARN, or set AWS_REGION", cfg.SecretID)
	}
	client := secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Secret{id: cfg.SecretID, client: client}, nil
}

// Login reads the secret's current value (AWSCURRENT) and parses it
// (ParseLogin).
func (s *Secret) Login(ctx context.Context) (Login, error) {
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.id)})
	if err != nil {
		return Login{}, fmt.Errorf("awssecrets: read secret %s: %w", s.id, err)
	}
	if out.SecretString == nil {
		return Login{}, fmt.Errorf("awssecrets: secret %s holds binary data; want a string: the password, or JSON {\"username\":...,\"password\":...}", s.id)
	}
	l, err := ParseLogin(*out.SecretString)
	if err != nil {
		return Login{}, fmt.Errorf("awssecrets: secret %s: %w", s.id, err)
	}
	return l, nil
}

// ParseLogin reads a secret's string: a JSON object with "password" (and
// optionally "username"), the form Secrets Manager's console and the
// rotation templates store, or else the password itself, byte for byte.
// Errors never quote the value.
func ParseLogin(value string) (Login, error) {
	if strings.HasPrefix(strings.TrimSpace(value), "{") {
		var v struct {
			Username *string `json:"username"`
			Password *string `json:"password"`
		}
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			return Login{}, errors.New("the value starts with '{' but is not a JSON object; want {\"username\":...,\"password\":...} or the plain password")
		}
		if v.Password == nil || *v.Password == "" {
			return Login{}, errors.New("the JSON value has no \"password\" (or an empty one)")
		}
		l := Login{Password: *v.Password}
		if v.Username != nil {
			l.Username = *v.Username
		}
		return l, nil
	}
	if value == "" {
		return Login{}, errors.New("the value is empty")
	}
	return Login{Password: value}, nil
}
