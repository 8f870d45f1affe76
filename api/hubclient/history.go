package hubclient

import (
	"context"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Generations returns every retained generation of a stream, newest
// first, reading ListGenerations page by page.
func (c *Client) Generations(ctx context.Context, stream string) ([]*confighubv1.GenerationRecord, error) {
	var out []*confighubv1.GenerationRecord
	var before uint64
	for {
		res, err := c.Hub.ListGenerations(ctx, &confighubv1.ListGenerationsRequest{Stream: stream, Before: before, Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, res.GetGenerations()...)
		if before = res.GetNextBefore(); before == 0 {
			return out, nil
		}
	}
}

// Diff compares two generations of a stream entity by entity (0, 0: the
// current one against the one before).
func (c *Client) Diff(ctx context.Context, stream string, from, to uint64) (*confighubv1.DiffConfigResponse, error) {
	return c.Hub.DiffConfig(ctx, &confighubv1.DiffConfigRequest{Stream: stream, From: from, To: to})
}

// Rollback pushes generation gen of a stream again as a new generation;
// expected, when not 0, must be the stream's current generation.
func (c *Client) Rollback(ctx context.Context, stream string, gen, expected uint64) (*confighubv1.RollbackConfigResponse, error) {
	return c.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Stream: stream, Generation: gen, ExpectedGeneration: expected})
}
