// Package registry is spatec's side of the schema registry (franz-go's sr
// client, Confluent's REST API): it registers a workload's Avro schema
// before the prefill, whose messages then carry the id the registry gave
// it, and tells whether the registry answers.
package registry

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// client reaches the registry at url (the base of its Confluent API, a
// path such as Apicurio's /apis/ccompat/v7 included) with a deadline on
// every request. The deadline is generous: a JVM registry's first write,
// at a fifth of a core just after start, was seen to take over 10 s.
func client(url string) (*sr.Client, error) {
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		return nil, fmt.Errorf("a schema registry client for %s: %w", url, err)
	}
	return cl, nil
}

// Register registers an Avro schema under subject and returns the id the
// registry gave it. Registering the same schema again returns the same
// id, so a session's repetitions and a reused topic agree.
func Register(ctx context.Context, url, subject, avsc string) (uint32, error) {
	cl, err := client(url)
	if err != nil {
		return 0, err
	}
	ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: avsc, Type: sr.TypeAvro})
	if err != nil {
		return 0, fmt.Errorf("registering the schema under subject %s at the registry %s: %w", subject, url, err)
	}
	if ss.ID <= 0 {
		return 0, fmt.Errorf("the registry %s registered subject %s under id %d; a Confluent framing needs a positive id", url, subject, ss.ID)
	}
	return uint32(ss.ID), nil
}

// Ping asks the registry for its subjects: it answers once it serves its
// API.
func Ping(ctx context.Context, url string) error {
	cl, err := client(url)
	if err != nil {
		return err
	}
	if _, err := cl.Subjects(ctx); err != nil {
		return fmt.Errorf("the schema registry at %s: %w", url, err)
	}
	return nil
}
