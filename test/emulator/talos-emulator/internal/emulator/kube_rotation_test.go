package emulator_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKubernetesCARotationLive: a Kubernetes CA rotation applied without a reboot, as talosctl
// rotate-ca --kubernetes does it (accepted, issuing, removed): the Kubernetes API on the endpoint
// issues its serving certificate from the control plane's cluster.ca and trusts client
// certificates of cluster.ca plus cluster.acceptedCAs of the config applied last, from the next
// handshake on; the kubeconfig the Talos API hands out follows (Talos' kubeconfig.GenerateAdmin).
func TestKubernetesCARotationLive(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 42, 1, 0, "v1.13.0")
	ctx := context.Background()
	addr := h.cps[0]

	h.applyAll()
	h.bootstrap()

	c := h.client(h.cps[:1])

	kubeconfig := func() []byte {
		t.Helper()

		kc, err := c.Kubeconfig(client.WithNode(ctx, addr))
		if err != nil {
			t.Fatalf("kubeconfig: %v", err)
		}

		return kc
	}

	// lists GETs the nodes on a fresh connection each time (a restarted kube-apiserver drops the
	// old ones; the emulator's keeps them).
	lists := func(kc []byte) error {
		rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
		if err != nil {
			return err
		}

		tlsConfig, err := rest.TLSConfigFor(rc)
		if err != nil {
			return err
		}

		httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}

		resp, err := httpClient.Get(rc.Host + "/api/v1/nodes")
		if err != nil {
			return err
		}

		defer resp.Body.Close() //nolint:errcheck

		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /api/v1/nodes: %s", resp.Status)
		}

		return nil
	}

	apply := func(patch string) {
		t.Helper()

		base, err := configloader.NewFromBytes(h.nodeConfig(addr))
		if err != nil {
			t.Fatal(err)
		}

		if _, err = c.ApplyConfiguration(client.WithNode(ctx, addr), &machine.ApplyConfigurationRequest{
			Data: patchConfig(t, base, patch),
			Mode: machine.ApplyConfigurationRequest_NO_REBOOT,
		}); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}

	old := kubeconfig()
	h.waitFor("the Kubernetes API answering the kubeconfig", func() error { return lists(old) })

	oldCA := h.bundle.ControlPlaneCfg.Cluster().IssuingCA()

	next, err := secrets.NewBundle(secrets.NewClock(), config.TalosVersionCurrent)
	if err != nil {
		t.Fatal(err)
	}

	newCA := next.Certs.K8s
	b64 := func(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

	// Accepted: the old kubeconfig still works.
	apply(fmt.Sprintf("cluster:\n  acceptedCAs:\n    - crt: %s\n", b64(newCA.Crt)))

	if err := lists(old); err != nil {
		t.Fatalf("accepted phase, old kubeconfig: %v", err)
	}

	// Issuing: the kubeconfig handed out now (a certificate of the new CA, both CAs trusted) works;
	// the old one no longer verifies the server's certificate.
	newIssuing := fmt.Sprintf("cluster:\n  ca:\n    crt: %s\n    key: %s\n", b64(newCA.Crt), b64(newCA.Key))

	apply(newIssuing + fmt.Sprintf("  acceptedCAs:\n    - crt: %s\n", b64(oldCA.Crt)))

	intermediate := kubeconfig()
	h.waitFor("the new CA issuing", func() error { return lists(intermediate) })

	if err := lists(old); err == nil {
		t.Fatal("issuing phase: the old kubeconfig still works")
	}

	// A certificate of the old CA, trusting the new server CA: accepted while the old CA is.
	stolen := withCA(t, old, newCA.Crt)
	if err := lists(stolen); err != nil {
		t.Fatalf("issuing phase, old certificate: %v", err)
	}

	// Removed: that certificate is refused; the kubeconfig handed out now works.
	apply(newIssuing)

	h.waitFor("the old CA no longer accepted", func() error {
		if err := lists(stolen); err == nil {
			return fmt.Errorf("a certificate of the old CA is still accepted")
		}

		return nil
	})

	if err := lists(kubeconfig()); err != nil {
		t.Fatalf("removed phase, new kubeconfig: %v", err)
	}
}

// withCA is kc with its cluster's CA data replaced by ca (its client certificate kept).
func withCA(t *testing.T, kc []byte, ca []byte) []byte {
	t.Helper()

	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}

	for _, cluster := range cfg.Clusters {
		cluster.CertificateAuthorityData = ca
	}

	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}

	return out
}
