import fc from "fast-check";
import { strict as assert } from "node:assert";
import {
  canonicalIp,
  deriveMac,
  hostPort,
  inSubnet,
  isDnsName,
  parseCidr,
} from "../components/net";
import { nodePortRules } from "../components/net/firewall";

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
