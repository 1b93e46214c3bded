package ports

import "context"

type clientKey struct{}

// WithClient says, in ctx, who is asking: the address the transport knows
// the client by. The per-client rate limit of ingest keys on it.
func WithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientOf is the client WithClient put in ctx, or "" when the transport
// named none.
func ClientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}
