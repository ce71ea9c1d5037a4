import * as proxmoxve from "@muhlba91/pulumi-proxmoxve";
import * as pulumi from "@pulumi/pulumi";
import type { ProxmoxSpec } from "../../config/types";
import type { PlatformImage } from "../../talos/imageFactory";

/** Proxmox connection settings plus the API token (secret). */
export interface ProxmoxPlatformArgs {
  readonly settings: ProxmoxSpec;
  /** `user@realm!tokenid=uuid`; when absent the provider reads PROXMOX_VE_API_TOKEN. */
  readonly apiToken?: pulumi.Output<string>;
  readonly clusterName: string;
  readonly talosVersion: string;
  /** The nocloud image every VM boots from. */
  readonly image: PlatformImage;
}

/** Proxmox's image download API decompresses gz, lzo, zst and bz2, but not the Image Factory's default xz. */
export function downloadableImageUrl(diskImageUrl: string): string {
  return diskImageUrl.replace(/\.raw\.xz$/, ".raw.gz");
}

/** The file name of a Talos image on a Proxmox datastore: one per version and schematic. */
export function imageFileName(talosVersion: string, schematicId: string): string {
  return `talos-${talosVersion}-${schematicId.slice(0, 12)}-nocloud-amd64.img`;
}

/** The Proxmox provider and one Talos nocloud image download per Proxmox host that runs a node. */
export class ProxmoxPlatform extends pulumi.ComponentResource {
  /** The provider every Proxmox resource of this cluster uses. */
  public readonly provider: proxmoxve.Provider;
  private readonly images = new Map<string, proxmoxve.download.File>();

  constructor(
    name: string,
    private readonly args: ProxmoxPlatformArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:proxmox:Platform", name, {}, opts);
    this.provider = new proxmoxve.Provider(
      `${name}-provider`,
      {
        endpoint: args.settings.endpoint,
        insecure: args.settings.insecure,
        apiToken: args.apiToken,
      },
      { parent: this },
    );
    this.registerOutputs({});
  }

  /** The Talos image on `host`'s image datastore, downloaded once per host. */
  imageOn(host: string): proxmoxve.download.File {
    const known = this.images.get(host);
    if (known) return known;
    const datastore =
      this.args.settings.hosts.find((h) => h.name === host)?.imageDatastore ?? "local";
    const { image, talosVersion } = this.args;
    const file = new proxmoxve.download.File(
      `${this.args.clusterName}-talos-image-${host}`,
      {
        nodeName: host,
        datastoreId: datastore,
        contentType: "iso",
        url: image.urls.diskImage.apply(downloadableImageUrl),
        fileName: image.schematicId.apply((id) => imageFileName(talosVersion, id)),
        decompressionAlgorithm: "gz",
        overwrite: false,
      },
      { parent: this, provider: this.provider },
    );
    this.images.set(host, file);
    return file;
  }
}
