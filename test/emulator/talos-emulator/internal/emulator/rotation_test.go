package emulator_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	xcrypto "github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// TestCARotationLive: a Talos API CA rotation applied without a reboot, as talosctl rotate-ca does it
// (accepted, issuing, removed): apid trusts machine.ca plus machine.acceptedCAs of the config applied
// last and issues its certificate from machine.ca, from the next handshake on.
func TestCARotationLive(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 41, 1, 0, "v1.13.0")
	ctx := context.Background()
	addr := h.cps[0]

	h.applyAll()

	oldCA := h.bundle.ControlPlaneCfg.Machine().Security().IssuingCA()

	next, err := secrets.NewBundle(secrets.NewClock(), config.TalosVersionCurrent)
	if err != nil {
		t.Fatal(err)
	}

	newCA := next.Certs.OS

	newCert, err := next.GenerateTalosAPIClientCertificate(role.MakeSet(role.Admin))
	if err != nil {
		t.Fatal(err)
	}

	oldConfig := h.talosconfig()
	// The talosconfig of the issuing phase: the new certificate, both CAs for the servers.
	bothCAs := append(append([]byte{}, newCA.Crt...), oldCA.Crt...)
	intermediate := clientconfig.NewConfig("intermediate", nil, bothCAs, newCert)
	newConfig := clientconfig.NewConfig("new", nil, newCA.Crt, newCert)

	works := func(cfg *clientconfig.Config) error {
		c, err := client.New(ctx, client.WithConfig(cfg), client.WithEndpoints(addr))
		if err != nil {
			return err
		}

		defer c.Close() //nolint:errcheck

		_, err = c.Version(ctx)

		return err
	}

	apply := func(cfg *clientconfig.Config, patch string) {
		t.Helper()

		base, err := configloader.NewFromBytes(h.nodeConfig(addr))
		if err != nil {
			t.Fatal(err)
		}

		c, err := client.New(ctx, client.WithConfig(cfg), client.WithEndpoints(addr))
		if err != nil {
			t.Fatal(err)
		}

		defer c.Close() //nolint:errcheck

		if _, err = c.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
			Data: patchConfig(t, base, patch),
			Mode: machine.ApplyConfigurationRequest_NO_REBOOT,
		}); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}

	b64 := func(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

	// Each apply patches the node's own config (its base), as the program renders every phase.
	// Accepted: the old credentials still work, and so does a certificate of the new CA.
	apply(oldConfig, fmt.Sprintf("machine:\n  acceptedCAs:\n    - crt: %s\n", b64(newCA.Crt)))

	for name, cfg := range map[string]*clientconfig.Config{"old": oldConfig, "intermediate": intermediate} {
		if err := works(cfg); err != nil {
			t.Fatalf("accepted phase, %s talosconfig: %v", name, err)
		}
	}

	if err := works(newConfig); err == nil {
		t.Fatal("accepted phase: the server certificate verified against the new CA alone")
	}

	// Issuing: the server certificate comes from the new CA; the old talosconfig no longer verifies it.
	newIssuing := fmt.Sprintf("machine:\n  ca:\n    crt: %s\n    key: %s\n", b64(newCA.Crt), b64(newCA.Key))

	apply(intermediate, newIssuing+fmt.Sprintf("  acceptedCAs:\n    - crt: %s\n", b64(oldCA.Crt)))

	h.waitFor("the new CA issuing", func() error { return works(newConfig) })

	if err := works(oldConfig); err == nil {
		t.Fatal("issuing phase: the old talosconfig still works")
	}

	// Removed: a certificate of the old CA is refused even by a client that trusts the new server CA.
	apply(newConfig, newIssuing)

	oldCertNewCA := clientconfig.NewConfig("stolen", nil, newCA.Crt, oldClientCert(t, oldConfig))

	h.waitFor("the old CA no longer accepted", func() error {
		if err := works(oldCertNewCA); err == nil {
			return fmt.Errorf("a certificate of the old CA is still accepted")
		}

		return nil
	})

	if err := works(newConfig); err != nil {
		t.Fatalf("removed phase, new talosconfig: %v", err)
	}
}

func oldClientCert(t *testing.T, cfg *clientconfig.Config) *xcrypto.PEMEncodedCertificateAndKey {
	t.Helper()

	ctx := cfg.Contexts[cfg.Context]

	crt, err := base64.StdEncoding.DecodeString(ctx.Crt)
	if err != nil {
		t.Fatal(err)
	}

	key, err := base64.StdEncoding.DecodeString(ctx.Key)
	if err != nil {
		t.Fatal(err)
	}

	return &xcrypto.PEMEncodedCertificateAndKey{Crt: crt, Key: key}
}
