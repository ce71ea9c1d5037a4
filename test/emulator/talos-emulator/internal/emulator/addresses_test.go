package emulator

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// A dual-stack control plane: what etcd advertises and what the kubelet reports, as Talos picks them.
func TestDualStackAddresses(t *testing.T) {
	addrs := []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.15.60.11"), netip.MustParseAddr("127.15.60.10")}

	for _, tc := range []struct {
		name, config string
		etcd         string
		nodeIPs      []string
	}{
		{
			// No pin: etcd takes the first routed address (IPv4 sorts first) while an IPv6-first kubelet
			// reports IPv6 first: the health check's "etcd members to be control plane nodes" fails.
			name:    "IPv6-first, etcd not pinned",
			config:  "machine: {type: controlplane}\ncluster: {network: {serviceSubnets: [fd00:10:96::/112, 10.96.0.0/12]}}",
			etcd:    "127.15.60.10",
			nodeIPs: []string{"::1", "127.15.60.10"},
		},
		{
			name:    "IPv6-first, etcd pinned to the kubelet's address",
			config:  "machine: {type: controlplane}\ncluster: {etcd: {advertisedSubnets: [::1/128]}, network: {serviceSubnets: [fd00:10:96::/112, 10.96.0.0/12]}}",
			etcd:    "::1",
			nodeIPs: []string{"::1", "127.15.60.10"},
		},
		{
			name:    "IPv4-first, the kubelet pinned, the VIP left out",
			config:  "machine: {type: controlplane, kubelet: {nodeIP: {validSubnets: [127.15.60.11/32, ::/0]}}}\n---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: 127.15.60.10\nlink: eth0",
			etcd:    "127.15.60.11",
			nodeIPs: []string{"127.15.60.11", "::1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configloader.NewFromBytes([]byte("version: v1alpha1\n" + tc.config))
			if err != nil {
				t.Fatal(err)
			}

			if got := etcdAdvertised(cfg, addrs); got.String() != tc.etcd {
				t.Errorf("etcd advertises %s, want %s", got, tc.etcd)
			}

			var got []string
			for _, ip := range kubeletNodeIPs(cfg, addrs) {
				got = append(got, ip.String())
			}

			if !slices.Equal(got, tc.nodeIPs) {
				t.Errorf("kubelet node IPs %v, want %v", got, tc.nodeIPs)
			}
		})
	}
}
