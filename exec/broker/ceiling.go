package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ceiling is the broker's raw consume rate over one read of a topic.
type Ceiling struct {
	Messages       int64
	Bytes          int64 // record values only, the declared message bytes
	Elapsed        time.Duration
	MessagesPerSec float64
	BytesPerSec    float64
	// Complete is true when every partition was read to the high
	// watermark it had when the read began.
	Complete bool
}

// ConsumeCeiling reads topic from its log start offsets with direct
// partition assignment (no consumer group, so no join or rebalance in the
// measurement) until every partition reaches the high watermark it had at
// the start, or limit passes (limit ≤ 0: no limit). The rate it returns is
// what the broker can serve to one tuned client: the consume ceiling.
func (c *Client) ConsumeCeiling(ctx context.Context, topic string, limit time.Duration) (Ceiling, error) {
	spans, err := c.spans(ctx, topic)
	if err != nil {
		return Ceiling{}, fmt.Errorf("measuring the consume ceiling: %w", err)
	}
	assign := map[int32]kgo.Offset{}
	left := 0 // partitions still short of their end
	next := make([]int64, len(spans))
	for p, s := range spans {
		next[p] = s.start
		if s.depth() > 0 {
			assign[int32(p)] = kgo.NewOffset().At(s.start)
			left++
		}
	}
	if left == 0 {
		return Ceiling{}, fmt.Errorf("measuring the consume ceiling: topic %s on %s is empty; prefill it first", topic, c.addrs())
	}

	runCtx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	begin := time.Now()
	cl, err := c.newKgo(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		// Large fetches keep the client from being the bottleneck: one
		// request carries many batches of every partition.
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(16<<20),
		kgo.BrokerMaxReadBytes(128<<20),
	)
	if err != nil {
		return Ceiling{}, err
	}
	defer cl.Close()

	var out Ceiling
	for left > 0 {
		fetches := cl.PollFetches(runCtx)
		if runCtx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("partition %d: %w", p, err))
		})
		if ferr != nil {
			return out, fmt.Errorf("measuring the consume ceiling of topic %s on %s: %w", topic, c.addrs(), ferr)
		}
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) == 0 {
				return
			}
			for _, r := range fp.Records {
				out.Bytes += int64(len(r.Value))
			}
			out.Messages += int64(len(fp.Records))
			p := fp.Partition
			was := next[p]
			next[p] = fp.Records[len(fp.Records)-1].Offset + 1
			if was < spans[p].end && next[p] >= spans[p].end {
				left--
			}
		})
	}
	out.Elapsed = time.Since(begin)
	out.Complete = left == 0
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("measuring the consume ceiling of topic %s: %w", topic, err)
	}
	if secs := out.Elapsed.Seconds(); secs > 0 {
		out.MessagesPerSec = float64(out.Messages) / secs
		out.BytesPerSec = float64(out.Bytes) / secs
	}
	return out, nil
}
