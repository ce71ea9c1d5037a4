import * as oci from "@pulumi/oci";
import * as pulumi from "@pulumi/pulumi";
import type { OciSpec } from "../../config/types";

/** Inputs of an {@link OciPlatform}. */
export interface OciPlatformArgs {
  readonly settings: OciSpec;
  readonly clusterName: string;
  readonly talosVersion: string;
  /** The shapes the cluster's OCI nodes use (an imported image must be declared compatible with each). */
  readonly shapes: readonly string[];
  /** The API signing key (secret), when the CLI found one; else ~/.oci/config or OCI_* variables. */
  readonly privateKey?: pulumi.Output<string>;
}

/**
 * The OCI provider for the stack's region (credentials from the environment or ~/.oci/config, never
 * from the stack file), the Talos `oracle` image, and the availability domains nodes are spread over.
 */
export class OciPlatform extends pulumi.ComponentResource {
  public readonly provider: oci.Provider;
  /** The image every OCI node boots. */
  public readonly imageId: pulumi.Output<string>;
  /** The availability domains, as listed in the stack file or looked up in the compartment. */
  public readonly availabilityDomains: pulumi.Output<string[]>;

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
    } else {
      const image = new oci.core.Image(
        `${args.clusterName}-talos-image-oci`,
        {
          compartmentId: settings.compartmentId,
          displayName: `talos-${args.talosVersion}-oracle-${settings.architecture}`,
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
      // A custom image runs on no shape until declared compatible with it (Flex shapes included).
      for (const shape of args.shapes) {
        new oci.core.ShapeManagement(
          `${args.clusterName}-talos-image-oci-${shape.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
          { compartmentId: settings.compartmentId, imageId: image.id, shapeName: shape },
          resourceOpts,
        );
      }
      this.imageId = image.id;
    }

    this.availabilityDomains = settings.availabilityDomains
      ? pulumi.output([...settings.availabilityDomains])
      : oci.identity
          .getAvailabilityDomainsOutput({ compartmentId: settings.compartmentId }, resourceOpts)
          .availabilityDomains.apply((domains) => domains.map((d) => d.name));
    this.registerOutputs({ imageId: this.imageId });
  }
}
