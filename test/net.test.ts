import fc from "fast-check";
import { strict as assert } from "node:assert";
import {
  allowedFlows,
  flowFamilies,
  ICMP_RULES,
  icmpOf,
  nodePortRules,
} from "../components/net/firewall";
import {
  canonicalIp,
  deriveMac,
  hostPort,
  inSubnet,
  isDnsName,
  parseCidr,
} from "../components/net";

describe("address helpers", () => {
  it("parses CIDRs of both families and rejects bad prefixes", () => {
    assert.deepEqual(parseCidr("192.0.2.11/24"), { ip: "192.0.2.11", prefix: 24, family: 4 });
    assert.deepEqual(parseCidr("2001:db8::11/64"), { ip: "2001:db8::11", prefix: 64, family: 6 });
    for (const bad of ["192.0.2.11/33", "2001:db8::/129", "192.0.2.11", "x/24", "192.0.2.11/24/1"])
      assert.equal(parseCidr(bad), undefined, bad);
  });

  it("tells whether an address is in a subnet, per family", () => {
    assert.equal(inSubnet("192.0.2.1", parseCidr("192.0.2.11/24")!), true);
    assert.equal(inSubnet("192.0.3.1", parseCidr("192.0.2.11/24")!), false);
    assert.equal(inSubnet("2001:db8::1", parseCidr("2001:db8::11/64")!), true);
    assert.equal(inSubnet("192.0.2.1", parseCidr("2001:db8::11/64")!), false);
  });

  it("brackets IPv6 hosts and canonicalises IPv6 spellings", () => {
    assert.equal(hostPort("2001:db8::1", 6443), "[2001:db8::1]:6443");
    assert.equal(hostPort("api.example.net", 6443), "api.example.net:6443");
    assert.equal(canonicalIp("2001:DB8:0:0::1"), "2001:db8::1");
    assert.equal(canonicalIp("192.0.2.1"), "192.0.2.1");
    assert.equal(isDnsName("api.example.net"), true);
    assert.equal(isDnsName("-bad.example.net"), false);
  });

  it("derives locally administered unicast MACs, stable per seed", () => {
    fc.assert(
      fc.property(fc.string(), (seed) => {
        const mac = deriveMac(seed);
        assert.match(mac, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
        const first = parseInt(mac.slice(0, 2), 16);
        assert.equal(first & 0b11, 0b10, "locally administered, unicast");
        assert.equal(deriveMac(seed), mac);
      }),
    );
  });

  it("derives distinct MACs for distinct VM IDs of a cluster", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 100, max: 999_999_999 }), {
          minLength: 2,
          maxLength: 300,
        }),
        (vmIds) => {
          const macs = new Set(vmIds.map((id) => deriveMac(`prod/${id}`)));
          assert.equal(macs.size, vmIds.length);
        },
      ),
    );
  });
});

describe("the flow table managed firewalls are built from", () => {
  const site = (name: string, cidrs: string[], controlPlaneCidrs: string[]) => ({
    name,
    platforms: [],
    nameservers: [],
    searchDomains: [],
    ntpServers: [],
    cidrs,
    controlPlaneCidrs,
  });

  it("lets every flow in from the platform's groups, other sites' prefixes when routed, and the APIs from apiAllowedCidrs", () => {
    const flows = allowedFlows({
      network: { cni: "flannel", connectivity: "routed" },
      otherSites: [site("home", ["192.0.2.0/24"], ["192.0.2.11/32"])] as any,
      apiAllowedCidrs: ["198.51.100.0/24"],
    });
    const described = flows.map(({ rule, remote }) => [
      rule.protocol,
      rule.ports?.from ?? rule.icmp?.v4?.type ?? rule.icmp?.v6?.type,
      "group" in remote ? remote.group : remote.prefix,
    ]);
    // The Talos API: from control planes here and at the other site, and from the workstation.
    assert.deepEqual(
      described.filter((d) => d[0] === "tcp" && d[1] === 50000),
      [
        ["tcp", 50000, "controlplane"],
        ["tcp", 50000, "192.0.2.11/32"],
        ["tcp", 50000, "198.51.100.0/24"],
      ],
    );
    // flannel from every node of the other site.
    assert.ok(described.some((d) => d.join() === "udp,4789,192.0.2.0/24"));
    // Path MTU discovery and neighbour discovery from anywhere, never per site.
    assert.deepEqual(
      described.filter((d) => d[0] === "icmp"),
      [
        ["icmp", 3, "0.0.0.0/0"],
        ["icmp", 3, "::/0"],
        ...[133, 134, 135, 136].flatMap((t) => [
          ["icmp", t, "0.0.0.0/0"],
          ["icmp", t, "::/0"],
        ]),
      ],
    );
  });

  it("opens nothing to other sites' prefixes over KubeSpan, whose port is open to anywhere", () => {
    const flows = allowedFlows({
      network: { cni: "flannel", connectivity: "kubespan" },
      otherSites: [site("home", ["192.0.2.0/24"], ["192.0.2.11/32"])] as any,
      apiAllowedCidrs: [],
    });
    assert.ok(flows.every(({ remote }) => !("prefix" in remote) || remote.prefix.endsWith("/0")));
    assert.ok(flows.some(({ rule }) => rule.ports?.from === 51820));
  });

  it("opens an ICMP flow only in the families it names a message of", () => {
    const [pmtu, ...ndp] = ICMP_RULES;
    assert.deepEqual(flowFamilies(pmtu, { group: "all" }), [4, 6]);
    assert.deepEqual(icmpOf(pmtu, 4), { type: 3, code: 4 });
    assert.deepEqual(icmpOf(pmtu, 6), { type: 2 });
    for (const rule of ndp) {
      assert.equal(rule.neighbourDiscovery, true);
      assert.deepEqual(flowFamilies(rule, { prefix: "0.0.0.0/0" }), []);
      assert.deepEqual(flowFamilies(rule, { prefix: "::/0" }), [6]);
    }
    const tcp = nodePortRules({ cni: "flannel", connectivity: "single" })[0];
    assert.deepEqual(flowFamilies(tcp, { prefix: "2001:db8::/32" }), [6]);
    assert.deepEqual(flowFamilies(tcp, { prefix: "192.0.2.1" }), [4]);
  });
});

describe("node-to-node flows with Cilium (components/net/firewall.ts)", () => {
  const vxlan = (routing?: Parameters<typeof nodePortRules>[0]["cilium"]) =>
    nodePortRules({ cni: "cilium", connectivity: "routed", cilium: routing }).filter(
      (r) => r.protocol === "udp" && r.ports?.from === 8472,
    );

  it("opens VXLAN in tunnel mode for the underlay's family only (Cilium's default: IPv4)", () => {
    assert.deepEqual(
      vxlan().map((r) => r.family),
      [4],
    );
    assert.deepEqual(
      vxlan({ routingMode: "tunnel", underlayProtocol: "ipv6" }).map((r) => r.family),
      [6],
    );
  });

  it("opens no VXLAN with native routing, and keeps health and Hubble", () => {
    const rules = nodePortRules({
      cni: "cilium",
      connectivity: "routed",
      cilium: { routingMode: "native", underlayProtocol: "ipv4" },
    });
    assert.equal(rules.filter((r) => r.ports?.from === 8472).length, 0);
    assert.ok(rules.some((r) => r.ports?.from === 4240));
    assert.ok(rules.some((r) => r.ports?.from === 4244));
  });
});
