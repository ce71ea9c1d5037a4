// Package pki issues the certificates an emulated Talos node presents, the way Talos does: a
// self-signed certificate in maintenance mode, and afterwards an API server certificate issued from
// the OS CA in the machine config the node received (clients authenticate with talosconfig
// certificates signed by that CA). It also issues the Kubernetes API server certificate from the
// cluster's Kubernetes CA.
package pki

import (
	"crypto/tls"
	stdx509 "crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/siderolabs/crypto/x509"
	secretsgen "github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/role"
)

// certLifetime is how long issued certificates live; an emulator run is far shorter.
const certLifetime = 24 * time.Hour

// MaintenanceCertificate is a self-signed server certificate for a node in maintenance mode:
// clients connect without verifying it (talosctl --insecure, the provider's insecure probe).
func MaintenanceCertificate(addr netip.Addr) (tls.Certificate, error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(
		x509.Organization("talos-emulator-maintenance"),
		x509.NotAfter(time.Now().Add(certLifetime)),
	)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("maintenance CA: %w", err)
	}

	return issue(ca, "maintenance-service", []net.IP{addr.AsSlice()}, nil,
		[]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth})
}

// ServerCertificate issues the Talos API server certificate of a configured node from the OS CA
// (machine.ca), valid for the node's address, its hostname and the config's certSANs.
func ServerCertificate(osCA *x509.PEMEncodedCertificateAndKey, addr netip.Addr, hostname string, certSANs []string) (tls.Certificate, error) {
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(osCA)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the machine config's OS CA (machine.ca) cannot sign: %w", err)
	}

	ips, names := splitSANs(certSANs)
	ips = append(ips, addr.AsSlice())

	if hostname != "" {
		names = append(names, hostname)
	}

	return issue(ca, hostname, ips, names, []stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth})
}

// KubernetesServerCertificate issues the Kubernetes API server certificate from the cluster's
// Kubernetes CA (cluster.ca) for the given addresses and names.
func KubernetesServerCertificate(k8sCA *x509.PEMEncodedCertificateAndKey, ips []netip.Addr, names []string) (tls.Certificate, error) {
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(k8sCA)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("the machine config's Kubernetes CA (cluster.ca) cannot sign: %w", err)
	}

	netIPs := make([]net.IP, 0, len(ips))
	for _, ip := range ips {
		netIPs = append(netIPs, ip.AsSlice())
	}

	return issue(ca, "kube-apiserver", netIPs, append(names, "kubernetes", "kubernetes.default"),
		[]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth})
}

// AdminClientConfig returns a TLS client config with a short-lived os:admin certificate issued from
// the OS CA, trusting that CA: what a control plane uses to call its own API (Talos' server-side
// health check does the same).
func AdminClientConfig(osCA *x509.PEMEncodedCertificateAndKey) (*x509.PEMEncodedCertificateAndKey, error) {
	return secretsgen.NewAdminCertificateAndKey(time.Now(), osCA, role.MakeSet(role.Admin), certLifetime)
}

// CertPool returns a pool holding one PEM certificate.
func CertPool(pemCert []byte) (*stdx509.CertPool, error) {
	pool := stdx509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCert) {
		return nil, fmt.Errorf("no PEM certificate found")
	}

	return pool, nil
}

func issue(ca *x509.CertificateAuthority, commonName string, ips []net.IP, names []string, usage []stdx509.ExtKeyUsage) (tls.Certificate, error) {
	pair, err := x509.NewKeyPair(ca,
		x509.CommonName(commonName),
		x509.IPAddresses(ips),
		x509.DNSNames(names),
		x509.ExtKeyUsage(usage),
		x509.NotBefore(time.Now().Add(-time.Minute)),
		x509.NotAfter(time.Now().Add(certLifetime)),
	)
	if err != nil {
		return tls.Certificate{}, err
	}

	cert, err := tls.X509KeyPair(pair.CrtPEM, pair.KeyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}

	return cert, nil
}

func splitSANs(sans []string) ([]net.IP, []string) {
	var (
		ips   []net.IP
		names []string
	)

	for _, san := range sans {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			names = append(names, san)
		}
	}

	return ips, names
}
