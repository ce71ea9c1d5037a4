import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, OpenstackSpec, SiteSpec } from "../../spec/types";
import { ipFamily, parseCidr } from "../../net";
import { type NodeSet, nodePortRules, type PortRule, WORKSTATION_RULES } from "../../net/firewall";
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

/** Where a rule's traffic may come from: a security group, or a prefix. */
type Remote = { readonly group: NodeSet } | { readonly prefix: string };

const ETHERTYPES = ["IPv4", "IPv6"] as const;

/** Neutron's protocol name of a flow for one ethertype. */
function protocolOf(rule: PortRule, ethertype: "IPv4" | "IPv6"): string {
  if (rule.protocol !== "icmp") return rule.protocol;
  return ethertype === "IPv6" ? "ipv6-icmp" : "icmp";
}

/** Security-group rule arguments of one flow from one remote: both ethertypes for a group. */
function ruleArgs(
  rule: PortRule,
  remote: Remote,
): {
  ethertype: "IPv4" | "IPv6";
  args: { protocol: string; portRangeMin?: number; portRangeMax?: number; remoteIpPrefix?: string };
}[] {
  const ports = rule.ports ? { portRangeMin: rule.ports.from, portRangeMax: rule.ports.to } : {};
  const ethertypes =
    "prefix" in remote
      ? [(parseCidr(remote.prefix)?.family ?? ipFamily(remote.prefix)) === 6 ? "IPv6" : "IPv4"]
      : ETHERTYPES;
  // A flow of one family (Cilium's VXLAN underlay) is let in from that family's sources only.
  const wanted = ethertypes.filter((e) => !rule.family || e === `IPv${rule.family}`);
  return wanted.map((ethertype) => {
    const type = ethertype as "IPv4" | "IPv6";
    return {
      ethertype: type,
      args: {
        protocol: protocolOf(rule, type),
        ...ports,
        ...("prefix" in remote ? { remoteIpPrefix: remote.prefix } : {}),
      },
    };
  });
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
    const allow = (rule: PortRule, remote: Remote, what: string) => {
      const target = groups[rule.on];
      if (!target) return;
      const remoteGroup = "group" in remote ? groups[remote.group] : undefined;
      if ("group" in remote && !remoteGroup) return;
      for (const { ethertype, args: ruleArgsForType } of ruleArgs(rule, remote)) {
        new openstack.networking.SecGroupRule(
          `${clusterName}-${rule.on === "all" ? "nodes" : "controlplanes"}-rule-${count++}`,
          {
            securityGroupId: target.id,
            direction: "ingress",
            ethertype,
            ...ruleArgsForType,
            ...(remoteGroup ? { remoteGroupId: remoteGroup.id } : {}),
            description: what,
          },
          resourceOpts,
        );
      }
    };
    for (const rule of nodePortRules(args.network)) {
      if (rule.from === "anywhere") {
        for (const prefix of ["0.0.0.0/0", "::/0"]) allow(rule, { prefix }, rule.what);
        continue;
      }
      allow(rule, { group: rule.from }, rule.what);
      // Other sites' nodes come through the firewall only when routed (KubeSpan tunnels them).
      if (args.network.connectivity !== "routed") continue;
      for (const site of args.otherSites) {
        const prefixes = rule.from === "controlplane" ? site.controlPlaneCidrs : site.cidrs;
        for (const prefix of prefixes) allow(rule, { prefix }, `${rule.what} (site ${site.name})`);
      }
    }
    for (const cidr of settings.apiAllowedCidrs) {
      for (const rule of WORKSTATION_RULES) allow(rule, { prefix: cidr }, rule.what);
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
