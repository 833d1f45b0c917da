// Package broker talks to the benchmark's Kafka-protocol broker (Redpanda on
// the bench hosts, an embedded kfake cluster in the local environment)
// through franz-go: it creates the topic, prefills it with the corpus
// idempotently, reads the expected message count from the high watermarks,
// and measures the raw consume ceiling.
package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	// ErrNoTopic reports that a topic the caller expects does not exist.
	ErrNoTopic = errors.New("topic does not exist")
	// ErrPartitionMismatch reports an existing topic whose partition count
	// differs from the one the plan declares.
	ErrPartitionMismatch = errors.New("topic partition count differs from the plan")
	// ErrDepthMismatch reports a topic holding a number of messages other
	// than zero or the plan's count: it cannot be reused nor filled.
	ErrDepthMismatch = errors.New("topic depth differs from the plan")
	// ErrContentMismatch reports a topic of the right depth whose messages
	// are not the plan's dataset (another dataset tag, message size or
	// partition layout).
	ErrContentMismatch = errors.New("topic content differs from the plan")
)

// Client is a connection to one broker cluster.
type Client struct {
	seeds []string
	opts  []kgo.Opt
	cl    *kgo.Client
	adm   *kadm.Client
}

// NewClient connects to the cluster through the seed brokers. opts are
// added to every franz-go client it makes (SASL, TLS, dialer), after
// spatec's own.
func NewClient(seeds []string, opts ...kgo.Opt) (*Client, error) {
	if len(seeds) == 0 {
		return nil, errors.New("connecting to the broker: no seed broker address given")
	}
	c := &Client{seeds: append([]string(nil), seeds...), opts: opts}
	cl, err := c.newKgo()
	if err != nil {
		return nil, err
	}
	c.cl = cl
	c.adm = kadm.NewClient(cl)
	return c, nil
}

func (c *Client) newKgo(opts ...kgo.Opt) (*kgo.Client, error) {
	all := append([]kgo.Opt{kgo.SeedBrokers(c.seeds...)}, opts...)
	all = append(all, c.opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("connecting to the broker at %s: %w", c.addrs(), err)
	}
	return cl, nil
}

func (c *Client) addrs() string { return strings.Join(c.seeds, ",") }

// Seeds are the addresses the client was given.
func (c *Client) Seeds() []string { return append([]string(nil), c.seeds...) }

// Close releases the client's connections.
func (c *Client) Close() { c.cl.Close() }

// Ping reports whether a broker answers.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.cl.Ping(ctx); err != nil {
		return fmt.Errorf("reaching the broker at %s: %w", c.addrs(), err)
	}
	return nil
}

// EnsureTopic creates topic with the given partition count, or accepts it
// when it already exists with that count.
func (c *Client) EnsureTopic(ctx context.Context, topic string, partitions int) error {
	if partitions < 1 {
		return fmt.Errorf("creating topic %s: partitions is %d; it must be at least 1", topic, partitions)
	}
	have, err := c.Partitions(ctx, topic)
	switch {
	case err == nil:
		return checkPartitions(topic, have, partitions)
	case !errors.Is(err, ErrNoTopic):
		return err
	}
	resp, err := c.adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	// The client caches topic metadata, including "unknown topic", for a
	// few seconds; the next look must see the topic as it now is.
	c.cl.PurgeTopicsFromClient(topic)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// Created by someone else between our look and our create.
		if have, err = c.Partitions(ctx, topic); err != nil {
			return err
		}
		return checkPartitions(topic, have, partitions)
	}
	if err != nil {
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w (%s)", err, resp.ErrMessage)
		}
		return fmt.Errorf("creating topic %s with %d partitions on %s: %w", topic, partitions, c.addrs(), err)
	}
	return c.awaitTopic(ctx, topic)
}

// topicWait bounds the wait for a new topic's partitions to have leaders.
const topicWait = 30 * time.Second

// awaitTopic waits until every partition of a topic just created answers
// for its offsets: a broker that created it (Kafka, with its controller)
// may take a moment to elect the partitions' leaders, and a prefill that
// starts before would find no topic.
func (c *Client) awaitTopic(ctx context.Context, topic string) error {
	deadline := time.Now().Add(topicWait)
	for {
		c.cl.PurgeTopicsFromClient(topic)
		_, err := c.spans(ctx, topic)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s was created on %s, but its partitions did not answer within %v: %w", topic, c.addrs(), topicWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func checkPartitions(topic string, have, want int) error {
	if have != want {
		return fmt.Errorf("%w: topic %s exists with %d partitions; the plan declares %d; delete the topic or use another name",
			ErrPartitionMismatch, topic, have, want)
	}
	return nil
}

// Partitions returns the partition count of topic, or an error wrapping
// ErrNoTopic.
func (c *Client) Partitions(ctx context.Context, topic string) (int, error) {
	details, err := c.adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("listing topic %s on %s: %w", topic, c.addrs(), err)
	}
	d, ok := details[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		c.cl.PurgeTopicsFromClient(topic) // do not remember the absence
		return 0, fmt.Errorf("%w: topic %s on %s", ErrNoTopic, topic, c.addrs())
	}
	if d.Err != nil {
		return 0, fmt.Errorf("listing topic %s on %s: %w", topic, c.addrs(), d.Err)
	}
	return len(d.Partitions), nil
}

// span is one partition's readable range: offsets [start, end).
type span struct{ start, end int64 }

func (s span) depth() int64 { return s.end - s.start }

// spans returns each partition's readable range, indexed by partition.
func (c *Client) spans(ctx context.Context, topic string) ([]span, error) {
	starts, err := c.adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, c.offsetsErr(topic, "start", err)
	}
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, c.offsetsErr(topic, "end", err)
	}
	n := len(ends[topic])
	if n == 0 {
		return nil, fmt.Errorf("%w: topic %s on %s", ErrNoTopic, topic, c.addrs())
	}
	out := make([]span, n)
	for p := range out {
		s, okS := starts.Lookup(topic, int32(p))
		e, okE := ends.Lookup(topic, int32(p))
		if !okS || !okE {
			return nil, fmt.Errorf("listing offsets of topic %s on %s: partition %d of %d is missing from the answer", topic, c.addrs(), p, n)
		}
		out[p] = span{start: s.Offset, end: e.Offset}
	}
	return out, nil
}

func (c *Client) offsetsErr(topic, which string, err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		c.cl.PurgeTopicsFromClient(topic) // do not remember the absence
		return fmt.Errorf("%w: topic %s on %s", ErrNoTopic, topic, c.addrs())
	}
	return fmt.Errorf("listing %s offsets of topic %s on %s: %w", which, topic, c.addrs(), err)
}

// Depth returns how many messages topic holds: the sum over its partitions
// of high watermark minus log start offset. It is the expected message
// count N of a drain, read from the broker itself before the arm starts.
func (c *Client) Depth(ctx context.Context, topic string) (int64, error) {
	spans, err := c.spans(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range spans {
		n += s.depth()
	}
	return n, nil
}

// DeleteTopic deletes topic; a missing topic is not an error.
func (c *Client) DeleteTopic(ctx context.Context, topic string) error {
	_, err := c.adm.DeleteTopic(ctx, topic)
	c.cl.PurgeTopicsFromClient(topic)
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("deleting topic %s on %s: %w", topic, c.addrs(), err)
	}
	return nil
}

// ResetGroups deletes every consumer group holding offsets on topic, so the
// next arm reads it from its start, and returns the groups deleted.
//
// A group can be deleted only once it is empty. The consumers of an arm
// that was stopped without leaving its group stay members until the broker
// drops them at the end of their session timeout: ResetGroups waits for
// that, telling waiting (when not nil) which group and how many members
// are left, until ctx ends.
func (c *Client) ResetGroups(ctx context.Context, topic string, waiting func(group string, members int)) ([]string, error) {
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing consumer groups on %s: %w", c.addrs(), err)
	}
	offsets := c.adm.FetchManyOffsets(ctx, listed.Groups()...)
	var onTopic []string
	for group, resp := range offsets {
		if resp.Err != nil {
			return nil, fmt.Errorf("reading the offsets of group %s: %w", group, resp.Err)
		}
		if _, ok := resp.Fetched[topic]; ok {
			onTopic = append(onTopic, group)
		}
	}
	if len(onTopic) == 0 {
		return nil, nil
	}
	sort.Strings(onTopic)
	for {
		if err := c.waitEmpty(ctx, onTopic, waiting); err != nil {
			return nil, err
		}
		deleted, err := c.adm.DeleteGroups(ctx, onTopic...)
		if err != nil {
			return nil, fmt.Errorf("deleting consumer groups %v: %w", onTopic, err)
		}
		again := false
		for g, r := range deleted {
			switch {
			case errors.Is(r.Err, kerr.NonEmptyGroup):
				// A member joined again between the look and the
				// delete (a consumer that was still leaving): wait
				// for the group to empty once more.
				again = true
			case r.Err != nil:
				return nil, fmt.Errorf("deleting consumer group %s: %w", g, r.Err)
			}
		}
		if !again {
			return onTopic, nil
		}
	}
}

// waitEmpty waits until none of groups has a member.
func (c *Client) waitEmpty(ctx context.Context, groups []string, waiting func(group string, members int)) error {
	told := map[string]bool{}
	busy, members := "", 0 // as last seen
	stillBusy := func() error {
		return fmt.Errorf("consumer group %s still has %d members, consumers that did not leave it; the broker drops them once their session times out: %w",
			busy, members, context.Cause(ctx))
	}
	for {
		described, err := c.adm.DescribeGroups(ctx, groups...)
		switch {
		case err != nil && ctx.Err() != nil && busy != "":
			return stillBusy() // the wait ended while asking again
		case err != nil:
			return fmt.Errorf("describing consumer groups %v: %w", groups, err)
		}
		busy, members = "", 0
		for _, g := range groups {
			// Empty, not merely memberless: a group still rebalancing
			// after its last member's session timed out refuses deletion.
			if d := described[g]; len(d.Members) > 0 || d.State != "Empty" && d.State != "Dead" {
				busy, members = g, len(d.Members)
				break
			}
		}
		if busy == "" {
			return nil
		}
		if waiting != nil && !told[busy] {
			told[busy] = true
			waiting(busy, members)
		}
		select {
		case <-ctx.Done():
			return stillBusy()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
