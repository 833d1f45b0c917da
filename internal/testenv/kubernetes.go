package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// KubeconfigPath is where `.ci/k8s up` writes the test cluster's
// kubeconfig for its admin.
const KubeconfigPath = "/run/spatec-k8s/admin.kubeconfig"

// KubeAPI reaches the test cluster's API server.
type KubeAPI struct {
	Server string
	Token  string
	Client *http.Client
}

// Kubernetes returns the test cluster's API, failing under CI=true, and
// skipping elsewhere, when the cluster is not up. The test command builds
// the cluster while every other test runs and starts it only for the tests
// whose names begin with TestKube: a test that calls this must be named so.
func Kubernetes(t testing.TB) KubeAPI {
	t.Helper()
	var api KubeAPI
	Require(t, "the single-node Kubernetes cluster (bash .ci/k8s up; the test command starts it only for tests named TestKube*)", func() (err error) {
		api, err = readKubeconfig(KubeconfigPath)
		if err != nil {
			return err
		}
		resp, err := api.Client.Get(api.Server + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s/readyz answered %s", api.Server, resp.Status)
		}
		return nil
	})
	return api
}

// readKubeconfig reads the server, its CA and the token of a kubeconfig
// of one cluster and one user, as .ci/k8s writes it.
func readKubeconfig(path string) (KubeAPI, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return KubeAPI{}, err
	}
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
				CA     string `json:"certificate-authority"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Token string `json:"token"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return KubeAPI{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		return KubeAPI{}, errors.New(path + ": want one cluster and one user")
	}
	ca, err := os.ReadFile(kc.Clusters[0].Cluster.CA)
	if err != nil {
		return KubeAPI{}, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return KubeAPI{}, errors.New(kc.Clusters[0].Cluster.CA + ": no certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	api := KubeAPI{Server: kc.Clusters[0].Cluster.Server, Token: kc.Users[0].User.Token}
	api.Client = &http.Client{Timeout: 10 * time.Second, Transport: bearer{api.Token, tr}}
	return api, nil
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
