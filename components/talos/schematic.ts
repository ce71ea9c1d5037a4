// The Image Factory schematic of each platform's image, without the network: which extensions and
// kernel arguments it carries, and its ID, which the Factory derives from the schematic itself (the
// SHA-256 of its canonical YAML: pkg/schematic in siderolabs/image-factory, `yaml.v3` Marshal of
// the Schematic struct, 4-space indents). Free of the Pulumi SDK: `validate` prints the ISO to boot
// each bare-metal node from with it.
import { createHash } from "node:crypto";
import type { Architecture, ImageFactorySpec, Platform } from "../spec/types";

/** The schematic of the plain Talos image (no extensions, no kernel args). */
export const VANILLA_SCHEMATIC_ID =
  "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

/** The Image Factory serves images and installers here (the provider's default). */
export const IMAGE_FACTORY_URL = "https://factory.talos.dev";

/** The extensions of one platform's image for one architecture: global, per platform, per architecture. */
export function imageExtensions(
  factory: ImageFactorySpec,
  platform: Platform,
  architecture: Architecture,
): string[] {
  return [
    ...new Set([
      ...factory.extensions,
      ...(factory.platformExtensions[platform] ?? []),
      ...(factory.architectureExtensions[architecture] ?? []),
    ]),
  ].sort();
}

/** A string `yaml.v3` writes unquoted: no indicator, no number, bool or null look-alike. */
function isPlainScalar(value: string): boolean {
  return (
    /^[A-Za-z0-9_./][A-Za-z0-9_./=,+@%~^-]*$/.test(value) &&
    !/^[-+]?(\.?[0-9]|\.(inf|Inf|INF|nan|NaN|NAN)$)/.test(value) &&
    !/^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~)$/.test(
      value,
    )
  );
}

/**
 * The schematic ID the Image Factory gives the schematic of `platform`'s image, as the program
 * registers it (components/talos/imageFactory.ts): the configured `schematicId` or the vanilla one
 * when nothing is customised. Undefined when a value would need quoting, whose canonical form is
 * not reproduced here (the ID is then known after `preview`).
 */
export function schematicId(
  factory: ImageFactorySpec,
  platform: Platform,
  architecture: Architecture,
): string | undefined {
  const extensions = imageExtensions(factory, platform, architecture);
  const kernelArgs = factory.extraKernelArgs;
  if (extensions.length === 0 && kernelArgs.length === 0) {
    return factory.schematicId ?? VANILLA_SCHEMATIC_ID;
  }
  if (![...extensions, ...kernelArgs].every(isPlainScalar)) return undefined;
  const list = (indent: string, values: readonly string[]) =>
    values.map((value) => `${indent}- ${value}\n`).join("");
  const canonical =
    "customization:\n" +
    (kernelArgs.length > 0 ? `    extraKernelArgs:\n${list("        ", kernelArgs)}` : "") +
    (extensions.length > 0
      ? `    systemExtensions:\n        officialExtensions:\n${list("            ", extensions)}`
      : "");
  return createHash("sha256").update(canonical).digest("hex");
}

/** The ISO a bare-metal machine boots from to wait in maintenance mode. */
export function metalIsoUrl(id: string, talosVersion: string, architecture: Architecture): string {
  return `${IMAGE_FACTORY_URL}/image/${id}/${talosVersion}/metal-${architecture}.iso`;
}
