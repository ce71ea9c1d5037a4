// How each Image Factory format of the nocloud image gets onto a Proxmox host and into a VM's disk.
// Pure: facts from the sources, checked there (see docs/platforms.md, Proxmox):
// - Proxmox's download-url API takes `import` content (VE 8.4+) only as `.raw`, `.qcow2`, `.vmdk` or
//   `.ova` files and refuses to decompress anything but `iso` content ("decompression not supported");
//   it decompresses gz, lzo, zst and bz2 (not xz).
// - `iso` content must be named `.iso` or `.img`.
// - The provider creates a disk from `import` content with `importFrom` through the API, and from any
//   other file (`fileId`) with `qm disk import` over SSH.
import type { ProxmoxSpec } from "../../spec/types";

/** One way of getting the image onto a host and into a disk. */
export interface ProxmoxImageFormat {
  /** What is asked of the Image Factory: `nocloud-amd64.<format>`. */
  readonly format: ProxmoxSpec["imageFormat"];
  /** The Proxmox content type of the downloaded file. */
  readonly contentType: "import" | "iso";
  /** What Proxmox decompresses on download, if anything. */
  readonly decompression?: "zst" | "gz";
  /** The file's extension on the datastore (Proxmox checks it). */
  readonly extension: "qcow2" | "raw" | "img";
  /** The disk attribute that names the file: the API's importFrom, or fileId (imported over SSH). */
  readonly diskAttribute: "importFrom" | "fileId";
  /** Needs SSH to the host. */
  readonly needsSsh: boolean;
}

/** Every format the program knows, by name. */
export const PROXMOX_IMAGE_FORMATS: Readonly<
  Record<ProxmoxSpec["imageFormat"], ProxmoxImageFormat>
> = {
  qcow2: {
    format: "qcow2",
    contentType: "import",
    extension: "qcow2",
    diskAttribute: "importFrom",
    needsSsh: false,
  },
  raw: {
    format: "raw",
    contentType: "import",
    extension: "raw",
    diskAttribute: "importFrom",
    needsSsh: false,
  },
  "raw.zst": {
    format: "raw.zst",
    contentType: "iso",
    decompression: "zst",
    extension: "img",
    diskAttribute: "fileId",
    needsSsh: true,
  },
  "raw.gz": {
    format: "raw.gz",
    contentType: "iso",
    decompression: "gz",
    extension: "img",
    diskAttribute: "fileId",
    needsSsh: true,
  },
};

/**
 * The file name of a Talos image on a Proxmox datastore: one per cluster, version, schematic and
 * format. The cluster's name keeps two stacks on one host from sharing (and one's destroy or
 * replacement deleting) the other's file.
 */
export function imageFileName(
  clusterName: string,
  talosVersion: string,
  schematicId: string,
  format: ProxmoxImageFormat,
): string {
  return `talos-${clusterName}-${talosVersion}-${schematicId.slice(0, 12)}-nocloud-amd64.${format.extension}`;
}
