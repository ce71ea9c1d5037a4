// components/config/rules/endpoint.ts: the Kubernetes API's endpoint.
import { strict as assert } from "node:assert";
import {
  itRefuses,
  mixedCluster,
  problemsOf,
  proxmoxCluster,
  RuleCase,
  warningsOf,
} from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "neither endpoint nor VIP",
    base: proxmoxCluster,
    broken: (v) => {
      delete v.cluster.endpoint;
      delete v.cluster.vip;
    },
    problems: [
      "cluster.endpoint: required unless cluster.vip is set. Give the Kubernetes API's DNS name or IP (e.g. api.staging.example.net), or a vip",
    ],
  },
  {
    rule: "an endpoint that is a worker's address",
    base: mixedCluster,
    broken: (v) => (v.cluster.endpoint = "192.0.2.21"),
    problems: [
      'cluster.endpoint: is the address of worker nodes[3].network.addresses[0]; got "192.0.2.21". No API server runs on a worker: use cluster.vip, a control plane\'s address, or a DNS name or load balancer in front of the control planes',
    ],
    // The VIP, or a control plane's own address, answers.
    valid: (v) => (v.cluster.endpoint = "192.0.2.10"),
  },
  {
    rule: "an IPv6 endpoint that is a bare-metal worker's address",
    base: mixedCluster,
    broken: (v) => (v.cluster.endpoint = "2001:db8:0::31"),
    problems: [
      'cluster.endpoint: is the address of worker nodes[4].network.addresses[1]; got "2001:db8:0::31". No API server runs on a worker: use cluster.vip, a control plane\'s address, or a DNS name or load balancer in front of the control planes',
    ],
    valid: (v) => (v.cluster.endpoint = "192.0.2.11"),
  },
];

describe("rules: endpoint", () => {
  itRefuses(cases);

  it("warns, without refusing, about an endpoint in the control planes' subnet that nothing answers on", () => {
    // The VIP removed, the endpoint still holding its address.
    const removedVip = (v: any) => {
      v.cluster.endpoint = "192.0.2.10";
      delete v.cluster.vip;
    };
    assert.deepEqual(problemsOf(proxmoxCluster, removedVip), []);
    assert.deepEqual(
      warningsOf(proxmoxCluster, removedVip).filter((w) => w.startsWith("cluster.endpoint")),
      [
        "cluster.endpoint: is in the subnet of control plane nodes[0] (192.0.2.11/24) but is neither cluster.vip nor a control plane's address, so nothing this stack configures answers there; got \"192.0.2.10\". If it was the VIP, set cluster.vip: 192.0.2.10 again; else use a control plane's address, or keep it if a load balancer of yours holds it",
      ],
    );
    // The VIP, a control plane's address, a name, or an emulator's loopback address: no warning.
    for (const change of [
      (v: any) => (v.cluster.endpoint = "192.0.2.10"),
      (v: any) => {
        v.cluster.endpoint = "192.0.2.12";
        delete v.cluster.vip;
      },
      (v: any) => delete v.cluster.vip,
      (v: any) => {
        v.nodes.forEach((node: any, i: number) => {
          node.network = { addresses: [`127.15.20.1${i + 1}/24`], gateway: "127.15.20.1" };
        });
        v.cluster.endpoint = "127.15.20.10";
        v.cluster.network.nameservers = ["127.15.20.1"];
        delete v.cluster.vip;
      },
    ]) {
      assert.deepEqual(problemsOf(proxmoxCluster, change), []);
      assert.deepEqual(
        warningsOf(proxmoxCluster, change).filter((w) => w.startsWith("cluster.endpoint")),
        [],
      );
    }
  });
});
