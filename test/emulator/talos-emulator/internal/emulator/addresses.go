package emulator

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
)

// How Talos v1.13 picks the addresses a node shows the cluster, from the addresses it holds and its
// config, so that checks which compare them (the health check's "etcd members to be control plane
// nodes", the Kubernetes node list) see what a real node would show:
//   - etcd (internal/app/machined/pkg/controllers/etcd/spec.go): without cluster.etcd.advertisedSubnets,
//     the first routed address; with them, every current address they match; the VIP never;
//   - the kubelet (controllers/k8s/nodeip.go, nodeip_config.go): machine.kubelet.nodeIP.validSubnets,
//     or one "any" subnet per service CIDR's family, in that order, then the first address of each
//     family; pod and service CIDRs and the VIP excluded.
// Routed addresses are sorted IPv4 first, then by value (network/internal/addressutil).

// talosOrder sorts addresses as Talos' node address controller does.
func talosOrder(addrs []netip.Addr) []netip.Addr {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, func(a, b netip.Addr) int { return a.Compare(b) })

	return sorted
}

// filterIPs keeps the addresses matching the subnets (in the subnets' order), minus those a
// "!"-prefixed subnet matches, as github.com/siderolabs/net's FilterIPs does.
func filterIPs(addrs []netip.Addr, subnets []string) []netip.Addr {
	var result []netip.Addr

	for _, subnet := range subnets {
		negative := strings.HasPrefix(subnet, "!")
		prefix, ok := parseSubnetOrAddress(strings.TrimPrefix(subnet, "!"))

		if !ok {
			continue
		}

		for _, addr := range addrs {
			switch {
			case prefix.Contains(addr) && !negative && !slices.Contains(result, addr):
				result = append(result, addr)
			case prefix.Contains(addr) && negative:
				result = slices.DeleteFunc(result, func(a netip.Addr) bool { return a == addr })
			}
		}
	}

	return result
}

func parseSubnetOrAddress(value string) (netip.Prefix, bool) {
	if prefix, err := netip.ParsePrefix(value); err == nil {
		return prefix, true
	}

	addr, err := netip.ParseAddr(value)
	if err != nil {
		return netip.Prefix{}, false
	}

	return netip.PrefixFrom(addr, addr.BitLen()), true
}

// vips are the config's virtual IPs (Layer2VIPConfig documents), never a node's own address.
func vips(cfg config.Provider) []string {
	var out []string

	for _, doc := range cfg.NetworkVirtualIPConfigs() {
		out = append(out, "!"+doc.VIP().String())
	}

	return out
}

// etcdAdvertised is the address a control plane's etcd advertises to its peers.
func etcdAdvertised(cfg config.Provider, addrs []netip.Addr) netip.Addr {
	ordered := talosOrder(addrs)
	subnets := cfg.Cluster().Etcd().AdvertisedSubnets()

	pinned := len(subnets) > 0
	if !pinned {
		subnets = []string{"0.0.0.0/0", "::/0"}
	}

	matched := filterIPs(ordered, append(subnets, vips(cfg)...))
	if len(matched) == 0 {
		return netip.Addr{}
	}

	if !pinned {
		// Talos advertises the first routed address; filterIPs put them in the subnets' order.
		return talosOrder(matched)[0]
	}

	return matched[0]
}

// kubeletNodeIPs are the node IPs a kubelet reports, primary first.
func kubeletNodeIPs(cfg config.Provider, addrs []netip.Addr) []netip.Addr {
	subnets := cfg.Machine().Kubelet().NodeIP().ValidSubnets()
	if len(subnets) == 0 {
		for _, cidr := range cfg.Cluster().Network().ServiceCIDRs() {
			if prefix, err := netip.ParsePrefix(cidr); err == nil && prefix.Addr().Is6() {
				subnets = append(subnets, "::/0")
			} else {
				subnets = append(subnets, "0.0.0.0/0")
			}
		}
	}

	for _, cidr := range slices.Concat(cfg.Cluster().Network().PodCIDRs(), cfg.Cluster().Network().ServiceCIDRs()) {
		subnets = append(subnets, "!"+cidr)
	}

	var nodeIPs []netip.Addr

	var has4, has6 bool

	for _, ip := range filterIPs(talosOrder(addrs), append(subnets, vips(cfg)...)) {
		switch {
		case ip.Is4() && !has4:
			nodeIPs, has4 = append(nodeIPs, ip), true
		case ip.Is6() && !has6:
			nodeIPs, has6 = append(nodeIPs, ip), true
		}
	}

	return nodeIPs
}
