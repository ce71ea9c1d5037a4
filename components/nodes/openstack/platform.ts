import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, OpenstackSpec, SiteSpec } from "../../spec/types";
import {
  allowedFlows,
  flowFamilies,
  icmpOf,
  type NodeSet,
  type PortRule,
} from "../../net/firewall";
import type { PlatformImage } from "../../talos/imageFactory";

/** Inputs of an {@link OpenstackPlatform}. */
export interface OpenstackPlatformArgs {
  readonly settings: OpenstackSpec;
  readonly clusterName: string;
  readonly talosVersion: string;
  /** The `openstack` image of the cluster's schematic, uploaded when the stack asks for it. */
  readonly image: PlatformImage;
  /** The control planes' VIP, when they share one. */
  readonly vip?: string;
  /** CNI, connectivity and sites: which node-to-node flows the security groups let in, from where. */
  readonly network: Pick<ClusterSpec["network"], "cni" | "connectivity" | "cilium">;
  /** The other sites, whose prefixes are let in when routed. */
  readonly otherSites: readonly SiteSpec[];
  /** True when a control plane runs on OpenStack (the control-plane group then exists). */
  readonly controlPlanesHere: boolean;
  /** An application credential secret (secret); else clouds.yaml or the OS_* variables. */
  readonly applicationCredentialSecret?: pulumi.Output<string>;
}

/** Neutron's protocol name of a flow in one family. */
function protocolOf(rule: PortRule, family: 4 | 6): string {
  if (rule.protocol !== "icmp") return rule.protocol;
  return family === 6 ? "ipv6-icmp" : "icmp";
}

/** Neutron's port range of a flow: ports, or for ICMP the type (min) and code (max). */
function portRangeOf(
  rule: PortRule,
  family: 4 | 6,
): { portRangeMin?: number; portRangeMax?: number } {
  if (rule.ports) return { portRangeMin: rule.ports.from, portRangeMax: rule.ports.to };
  const icmp = icmpOf(rule, family);
  if (!icmp) return {};
  return {
    portRangeMin: icmp.type,
    ...(icmp.code !== undefined ? { portRangeMax: icmp.code } : {}),
  };
}

/**
 * The OpenStack provider (credentials from the OS_* variables or clouds.yaml, never the stack file),
 * the Talos image, the security groups (every node; control planes) opening exactly the node-to-node
 * flows the cluster needs (from nodes here, and from other sites' prefixes when routed) and the APIs
 * to `apiAllowedCidrs`, and the VIP's port when control planes share a VIP.
 */
export class OpenstackPlatform extends pulumi.ComponentResource {
  public readonly provider: openstack.Provider;
  public readonly imageId: pulumi.Output<string>;
  /** The group every node's port is in. */
  public readonly securityGroupId: pulumi.Output<string>;
  /** The group control-plane ports are in as well (when a control plane runs here). */
  public readonly controlPlaneSecurityGroupId?: pulumi.Output<string>;
  /**
   * The Nova server group control-plane instances are created in (`openstack.controlPlaneServerGroup`),
   * so no compute host carries two of them and a host's loss costs etcd one member at most.
   */
  public readonly controlPlaneServerGroupId?: pulumi.Output<string>;
  /** The port holding the VIP; control-plane ports allow it as an address pair. */
  public readonly vipPort?: openstack.networking.Port;

  constructor(name: string, args: OpenstackPlatformArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:openstack:Platform", name, {}, opts);
    const { settings, clusterName } = args;
    this.provider = new openstack.Provider(
      `${name}-provider`,
      {
        ...(settings.region ? { region: settings.region } : {}),
        ...(args.applicationCredentialSecret
          ? { applicationCredentialSecret: args.applicationCredentialSecret }
          : {}),
      },
      { parent: this },
    );
    const resourceOpts = { parent: this, provider: this.provider };
    const imageName = `talos-${args.talosVersion}-openstack-amd64`;

    this.imageId =
      "name" in settings.image
        ? openstack.images.getImageOutput(
            { name: settings.image.name, mostRecent: true },
            resourceOpts,
          ).id
        : new openstack.images.Image(
            `${clusterName}-talos-image-openstack`,
            {
              name: imageName,
              containerFormat: "bare",
              diskFormat: "raw",
              imageSourceUrl: args.image.urls.diskImage,
              decompress: true,
              visibility: "private",
              tags: ["talos", clusterName],
            },
            resourceOpts,
          ).id;

    const group = new openstack.networking.SecGroup(
      `${clusterName}-nodes`,
      { description: `Talos nodes of cluster ${clusterName}`, tags: ["talos", clusterName] },
      resourceOpts,
    );
    const controlPlaneGroup = args.controlPlanesHere
      ? new openstack.networking.SecGroup(
          `${clusterName}-controlplanes`,
          {
            description: `Talos control planes of cluster ${clusterName}`,
            tags: ["talos", clusterName],
          },
          resourceOpts,
        )
      : undefined;
    this.securityGroupId = group.id;
    this.controlPlaneSecurityGroupId = controlPlaneGroup?.id;
    const policy = args.settings.controlPlaneServerGroup;
    if (args.controlPlanesHere && policy !== "none") {
      // Its policy cannot change in place: a new group means new control-plane instances (the
      // scheduler hint forces a replacement), so a policy change is a one-node-at-a-time job.
      this.controlPlaneServerGroupId = new openstack.compute.ServerGroup(
        `${clusterName}-controlplanes`,
        { name: `${clusterName}-controlplanes`, policies: [policy] },
        resourceOpts,
      ).id;
    }
    const groups: Record<NodeSet, openstack.networking.SecGroup | undefined> = {
      all: group,
      controlplane: controlPlaneGroup,
    };

    let count = 0;
    const flows = allowedFlows({
      network: args.network,
      otherSites: args.otherSites,
      apiAllowedCidrs: settings.apiAllowedCidrs,
    });
    for (const { rule, remote, what } of flows) {
      // Neutron's firewall drivers always let neighbour discovery in (neutron/agent/firewall.py).
      if (rule.neighbourDiscovery) continue;
      const target = groups[rule.on];
      if (!target) continue;
      const remoteGroup = "group" in remote ? groups[remote.group] : undefined;
      if ("group" in remote && !remoteGroup) continue;
      for (const family of flowFamilies(rule, remote)) {
        new openstack.networking.SecGroupRule(
          `${clusterName}-${rule.on === "all" ? "nodes" : "controlplanes"}-rule-${count++}`,
          {
            securityGroupId: target.id,
            direction: "ingress",
            ethertype: family === 6 ? "IPv6" : "IPv4",
            protocol: protocolOf(rule, family),
            ...portRangeOf(rule, family),
            ...("prefix" in remote ? { remoteIpPrefix: remote.prefix } : {}),
            ...(remoteGroup ? { remoteGroupId: remoteGroup.id } : {}),
            description: what,
          },
          resourceOpts,
        );
      }
    }

    if (args.vip) {
      this.vipPort = new openstack.networking.Port(
        `${clusterName}-vip`,
        {
          name: `${clusterName}-vip`,
          networkId: settings.networkId,
          fixedIps: [{ subnetId: settings.subnetId!, ipAddress: args.vip }],
          securityGroupIds: [group.id, ...(controlPlaneGroup ? [controlPlaneGroup.id] : [])],
          tags: ["talos", clusterName],
        },
        resourceOpts,
      );
    }
    this.registerOutputs({ imageId: this.imageId, securityGroupId: this.securityGroupId });
  }
}
