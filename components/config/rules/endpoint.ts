// How the Kubernetes API is reached: a DNS name or IP (`cluster.endpoint`), or the VIP (vip.ts). An IP
// endpoint is not a worker's address (no API server runs there), and one in a control plane's subnet
// that is neither the VIP nor a control plane's address is probably a VIP removed from the stack
// (a warning: a load balancer of the operator's may answer there).
import { canonicalIp, inSubnet, ipFamily, parseCidr } from "../../net";
import { claimedAddresses, staticNetwork } from "../derived";
import type { Rule } from "./rule";

/** Whether an address is a loopback one (an emulated cluster's: no subnet of a real link). */
function isLoopback(ip: string): boolean {
  return ipFamily(ip) === 4 ? ip.startsWith("127.") : canonicalIp(ip) === "::1";
}

/** The cluster names an endpoint, or a VIP that serves as one. */
export const endpoint: Rule = ({ cluster, nodes }, problems) => {
  if (cluster && cluster.endpoint === undefined && cluster.vip === undefined) {
    problems.add(["cluster", "endpoint"], "required unless cluster.vip is set", {
      hint: "Give the Kubernetes API's DNS name or IP (e.g. api.staging.example.net), or a vip",
    });
  }
  const ip = cluster?.endpoint;
  if (!ip || ipFamily(ip) === undefined) return;
  const address = canonicalIp(ip);
  if (cluster.vip && canonicalIp(cluster.vip) === address) return;
  let controlPlaneAddress = false;
  for (const entry of nodes) {
    for (const claimed of claimedAddresses(entry)) {
      if (canonicalIp(claimed.ip) !== address) continue;
      if (entry.node.role === "controlplane") {
        controlPlaneAddress = true;
      } else {
        problems.add(["cluster", "endpoint"], `is the address of worker ${claimed.key}`, {
          got: ip,
          hint: "No API server runs on a worker: use cluster.vip, a control plane's address, or a DNS name or load balancer in front of the control planes",
        });
        return;
      }
    }
  }
  if (controlPlaneAddress || isLoopback(ip)) return;
  for (const { index, node } of nodes) {
    if (node.role !== "controlplane") continue;
    const subnet = staticNetwork(node)?.addresses.find((a) => inSubnet(ip, parseCidr(a)!));
    if (!subnet) continue;
    problems.warn(
      ["cluster", "endpoint"],
      `is in the subnet of control plane nodes[${index}] (${subnet}) but is neither cluster.vip nor a control plane's address, so nothing this stack configures answers there`,
      {
        got: ip,
        hint: `If it was the VIP, set cluster.vip: ${ip} again; else use a control plane's address, or keep it if a load balancer of yours holds it`,
      },
    );
    return;
  }
};
