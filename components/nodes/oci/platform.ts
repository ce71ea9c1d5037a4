import * as oci from "@pulumi/oci";
import * as pulumi from "@pulumi/pulumi";
import {
  allowedFlows,
  flowFamilies,
  icmpOf,
  type NodeSet,
  type PortRule,
} from "../../net/firewall";
import type { ClusterSpec, OciSpec, SiteSpec } from "../../spec/types";

/** Inputs of an {@link OciPlatform}. */
export interface OciPlatformArgs {
  readonly settings: OciSpec;
  readonly clusterName: string;
  readonly talosVersion: string;
  /** The shapes the cluster's OCI nodes use (an imported image must be declared compatible with each). */
  readonly shapes: readonly string[];
  /** The API signing key (secret), when the CLI found one; else ~/.oci/config or OCI_* variables. */
  readonly privateKey?: pulumi.Output<string>;
  /** CNI and connectivity: which node-to-node flows the managed NSGs let in. */
  readonly network: Pick<ClusterSpec["network"], "cni" | "connectivity">;
  /** The other sites, whose prefixes are let in when routed. */
  readonly otherSites: readonly SiteSpec[];
  /** True when a control plane runs on OCI (the control-plane NSG then exists). */
  readonly controlPlanesHere: boolean;
}

/** OCI's protocol number of a flow in one family (IANA: ICMP 1, TCP 6, UDP 17, ICMPv6 58). */
function protocolNumber(rule: PortRule, family: 4 | 6): string {
  switch (rule.protocol) {
    case "tcp":
      return "6";
    case "udp":
      return "17";
    case "icmp":
      return family === 6 ? "58" : "1";
  }
}

/** The options of a flow's NSG rule: destination ports for TCP and UDP, type and code for ICMP. */
function ruleOptions(
  rule: PortRule,
  family: 4 | 6,
): Partial<oci.core.NetworkSecurityGroupSecurityRuleArgs> {
  const range = rule.ports && {
    destinationPortRange: { min: rule.ports.from, max: rule.ports.to },
  };
  if (rule.protocol === "tcp") return range ? { tcpOptions: range } : {};
  if (rule.protocol === "udp") return range ? { udpOptions: range } : {};
  const icmp = icmpOf(rule, family);
  return icmp
    ? { icmpOptions: { type: icmp.type, ...(icmp.code !== undefined ? { code: icmp.code } : {}) } }
    : {};
}

/** What the Talos `oracle` image needs from the VM, declared on the imported image (no tenancy defaults). */
const IMAGE_CAPABILITIES: Readonly<Record<string, string>> = Object.fromEntries(
  (
    [
      // Talos' oracle images boot with UEFI only (arm64 has no BIOS at all).
      ["Compute.Firmware", "UEFI_64"],
      ["Compute.LaunchMode", "PARAVIRTUALIZED"],
      ["Network.AttachmentType", "PARAVIRTUALIZED"],
      ["Storage.BootVolumeType", "PARAVIRTUALIZED"],
    ] as const
  ).map(([key, value]) => [
    key,
    JSON.stringify({
      descriptorType: "enumstring",
      source: "IMAGE",
      defaultValue: value,
      values: [value],
    }),
  ]),
);

/**
 * The imported image's display name, from the object it is imported from (`…/o/talos-v1.13.9-oracle-arm64.qcow2`
 * → `talos-v1.13.9-oracle-arm64`), so the name always says what the image holds.
 */
export function imageDisplayName(objectStorageUri: string, architecture: string): string {
  const object = decodeURIComponent(new URL(objectStorageUri).pathname.split("/").pop() ?? "");
  const base = object.replace(/\.(qcow2|img|raw|oci)$/i, "");
  return base !== "" ? base : `talos-oracle-${architecture}`;
}

/**
 * The OCI provider for the stack's region (credentials from the environment or ~/.oci/config, never
 * from the stack file), the Talos `oracle` image, and the availability domains nodes are spread over.
 */
export class OciPlatform extends pulumi.ComponentResource {
  public readonly provider: oci.Provider;
  /** The image every OCI node boots. */
  public readonly imageId: pulumi.Output<string>;
  /** The imported image's capability schema (absent for an existing image). */
  public readonly imageCapabilities?: oci.core.ComputeImageCapabilitySchema;
  /** The imported image's compatibility entry per shape (empty for an existing image). */
  public readonly shapeCompatibility: ReadonlyMap<string, oci.core.ShapeManagement>;
  /** The availability domains, as listed in the stack file or looked up in the compartment. */
  public readonly availabilityDomains: pulumi.Output<string[]>;
  /** The managed NSG every node's VNIC is in (`oci.manageNsgs`). */
  public readonly nodeNsgId?: pulumi.Output<string>;
  /** The managed NSG control-plane VNICs are in as well (when a control plane runs here). */
  public readonly controlPlaneNsgId?: pulumi.Output<string>;

  constructor(name: string, args: OciPlatformArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:oci:Platform", name, {}, opts);
    const { settings } = args;
    this.provider = new oci.Provider(
      `${name}-provider`,
      { region: settings.region, ...(args.privateKey ? { privateKey: args.privateKey } : {}) },
      { parent: this },
    );
    const resourceOpts = { parent: this, provider: this.provider };

    if ("id" in settings.image) {
      this.imageId = pulumi.output(settings.image.id);
      this.shapeCompatibility = new Map();
    } else {
      const image = new oci.core.Image(
        `${args.clusterName}-talos-image-oci`,
        {
          compartmentId: settings.compartmentId,
          // Named after its source: the image holds whatever that object holds, whatever talosVersion says.
          displayName: imageDisplayName(settings.image.objectStorageUri, settings.architecture),
          launchMode: "PARAVIRTUALIZED",
          imageSourceDetails: {
            sourceType: "objectStorageUri",
            sourceUri: settings.image.objectStorageUri,
            sourceImageType: "QCOW2",
          },
          freeformTags: { ...settings.freeformTags, "talos-cluster": args.clusterName },
        },
        resourceOpts,
      );
      // Firmware and launch mode stated on the image, not left to the tenancy's defaults for imports.
      const globalSchema = oci.core
        .getComputeGlobalImageCapabilitySchemasOutput({}, resourceOpts)
        .computeGlobalImageCapabilitySchemas.apply((schemas) => {
          if (schemas.length === 0) throw new Error("OCI lists no global image capability schema");
          return schemas[0].currentVersionName;
        });
      this.imageCapabilities = new oci.core.ComputeImageCapabilitySchema(
        `${args.clusterName}-talos-image-oci-capabilities`,
        {
          compartmentId: settings.compartmentId,
          imageId: image.id,
          computeGlobalImageCapabilitySchemaVersionName: globalSchema,
          schemaData: { ...IMAGE_CAPABILITIES },
        },
        resourceOpts,
      );
      // A custom image runs on no shape until declared compatible with it (Flex shapes included).
      const compatibility = new Map<string, oci.core.ShapeManagement>();
      for (const shape of args.shapes) {
        compatibility.set(
          shape,
          new oci.core.ShapeManagement(
            `${args.clusterName}-talos-image-oci-${shape.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
            { compartmentId: settings.compartmentId, imageId: image.id, shapeName: shape },
            resourceOpts,
          ),
        );
      }
      this.shapeCompatibility = compatibility;
      this.imageId = image.id;
    }

    if (settings.manageNsgs) {
      const groups = this.createNsgs(args, resourceOpts);
      this.nodeNsgId = groups.all?.id;
      this.controlPlaneNsgId = groups.controlplane?.id;
    }

    this.availabilityDomains = settings.availabilityDomains
      ? pulumi.output([...settings.availabilityDomains])
      : oci.identity
          .getAvailabilityDomainsOutput({ compartmentId: settings.compartmentId }, resourceOpts)
          .availabilityDomains.apply((domains) => domains.map((d) => d.name));
    this.registerOutputs({ imageId: this.imageId });
  }

  /**
   * The cluster's NSGs, in the VCN of `oci.subnetId` (NSGs belong to one VCN, and a VNIC can only be
   * in its own VCN's), with the flows of the shared table: from the groups themselves, from the other
   * sites' prefixes when routed, from anywhere where the table says so, and the APIs from
   * `oci.apiAllowedCidrs`. Stateful ingress rules only: OCI allows a packet that any of the subnet's
   * security lists or the VNIC's NSGs allows, so egress stays with the subnet's security list.
   */
  private createNsgs(
    args: OciPlatformArgs,
    resourceOpts: pulumi.CustomResourceOptions,
  ): Record<NodeSet, oci.core.NetworkSecurityGroup | undefined> {
    const { settings, clusterName } = args;
    const vcnId = oci.core.getSubnetOutput({ subnetId: settings.subnetId }, resourceOpts).vcnId;
    const tags = { ...settings.freeformTags, "talos-cluster": clusterName };
    const group = (suffix: string, what: string) =>
      new oci.core.NetworkSecurityGroup(
        `${clusterName}-${suffix}-nsg`,
        {
          compartmentId: settings.compartmentId,
          vcnId,
          displayName: `${clusterName}-${suffix}`,
          freeformTags: { ...tags, "talos-nsg": what },
        },
        resourceOpts,
      );
    const groups: Record<NodeSet, oci.core.NetworkSecurityGroup | undefined> = {
      all: group("nodes", "nodes"),
      controlplane: args.controlPlanesHere ? group("controlplanes", "controlplanes") : undefined,
    };
    let count = 0;
    const flows = allowedFlows({
      network: args.network,
      otherSites: args.otherSites,
      apiAllowedCidrs: settings.apiAllowedCidrs,
    });
    for (const { rule, remote, what } of flows) {
      const target = groups[rule.on];
      if (!target) continue;
      const source = "group" in remote ? groups[remote.group] : undefined;
      if ("group" in remote && !source) continue;
      // TCP and UDP rules match both families; ICMP and ICMPv6 are separate protocols.
      const families = flowFamilies(rule, remote);
      for (const family of rule.protocol === "icmp" ? families : families.slice(0, 1)) {
        new oci.core.NetworkSecurityGroupSecurityRule(
          `${clusterName}-${rule.on === "all" ? "nodes" : "controlplanes"}-nsg-rule-${count++}`,
          {
            networkSecurityGroupId: target.id,
            direction: "INGRESS",
            protocol: protocolNumber(rule, family),
            ...(source
              ? { source: source.id, sourceType: "NETWORK_SECURITY_GROUP" }
              : { source: (remote as { prefix: string }).prefix, sourceType: "CIDR_BLOCK" }),
            stateless: false,
            ...ruleOptions(rule, family),
            description: what,
          },
          resourceOpts,
        );
      }
    }
    return groups;
  }

  /**
   * What an instance of `shape` must wait for besides the image id: the image's capability schema
   * and its compatibility with the shape. Launched before them, the instance races them on a first
   * `up` (OCI refuses a shape the image is not yet declared compatible with).
   */
  imageReadyFor(shape: string): pulumi.Resource[] {
    const compatibility = this.shapeCompatibility.get(shape);
    return [
      ...(this.imageCapabilities ? [this.imageCapabilities] : []),
      ...(compatibility ? [compatibility] : []),
    ];
  }
}
