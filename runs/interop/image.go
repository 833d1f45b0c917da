package interop

import (
	"strings"

	"github.com/distribution/reference"
)

// ImageName is an image reference as the two tools can compare it: the
// repository's path and its tag (and digest, where it has one), without
// the registry's host. The harness names its images by their Docker Hub
// path (redpandadata/redpanda:v26.1.13) and an environment of spatec's may
// pull the same repository from another address of it
// (docker.redpanda.com/redpandadata/redpanda:v26.1.13); what each image
// held is compared by its ID, where both records have one. A reference
// that does not parse is returned as written, so it agrees only with
// itself.
func ImageName(ref string) string {
	ref = strings.TrimSpace(ref)
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	out := reference.Path(named)
	if t, ok := named.(reference.Tagged); ok {
		out += ":" + t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		out += "@" + d.Digest().String()
	}
	return out
}
