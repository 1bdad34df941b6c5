package pandohost_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// kube reads the test cluster's API as its admin, to check what an adapter
// left behind (the tests' own eyes, not the adapter's).
type kube struct {
	server string
	token  string
	client *http.Client
}

func newKube(t *testing.T) *kube {
	t.Helper()
	server, tokenFile, caFile := os.Getenv("PANDOHOST_TEST_API_SERVER"), os.Getenv("PANDOHOST_TEST_ADMIN_TOKEN"), os.Getenv("PANDOHOST_TEST_CA")
	if server == "" || tokenFile == "" || caFile == "" {
		t.Skip("PANDOHOST_TEST_API_SERVER, _ADMIN_TOKEN and _CA are not set (scripts/test sets them)")
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	return &kube{
		server: strings.TrimRight(server, "/"),
		token:  strings.TrimSpace(string(token)),
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}
}

func (k *kube) get(ctx context.Context, path string, into any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.server+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+k.token)
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(into)
}

type object struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// namespaces are the namespaces with this label selector.
func (k *kube) namespaces(ctx context.Context, selector string) ([]object, error) {
	var list struct {
		Items []object `json:"items"`
	}
	code, err := k.get(ctx, "/api/v1/namespaces?labelSelector="+url.QueryEscape(selector), &list)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("listing namespaces: HTTP %d", code)
	}
	return list.Items, err
}

// podPhase is a pod's phase, "" when it does not exist.
func (k *kube) podPhase(ctx context.Context, ns, name string) (string, error) {
	var pod object
	code, err := k.get(ctx, "/api/v1/namespaces/"+ns+"/pods/"+name, &pod)
	if code == http.StatusNotFound {
		return "", nil
	}
	return pod.Status.Phase, err
}

// namespaceGone says whether a namespace is gone or being deleted.
func (k *kube) namespaceGone(ctx context.Context, name string) (bool, error) {
	var ns object
	code, err := k.get(ctx, "/api/v1/namespaces/"+name, &ns)
	if code == http.StatusNotFound {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return ns.Metadata.DeletionTimestamp != nil, nil
}
