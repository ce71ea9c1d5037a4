import * as pulumi from "@pulumi/pulumi";

/** The provider release whose schema this SDK mirrors; the engine downloads this plugin. */
export const PROVIDER_VERSION = "0.8.1";

/** Where the engine fetches the provider plugin from (the registry package's `pulumi.server`). */
export const PLUGIN_DOWNLOAD_URL = "github://api.github.com/pulumiverse";

/** The plugin version, as generated SDKs expose it. */
export function getVersion(): string {
  return PROVIDER_VERSION;
}

/** Options every resource and invoke of this package carries, so a real engine loads the real plugin. */
export function resourceOptsDefaults(): { version: string; pluginDownloadURL: string } {
  return { version: PROVIDER_VERSION, pluginDownloadURL: PLUGIN_DOWNLOAD_URL };
}

/** Merges the package defaults under the caller's resource options. */
export function withDefaults<T extends pulumi.CustomResourceOptions>(opts: T | undefined): T {
  return pulumi.mergeOptions(resourceOptsDefaults(), opts ?? {}) as T;
}

/** Adds the schema's secret outputs to the caller's options, as generated SDKs do. */
export function withSecretOutputs(
  opts: pulumi.CustomResourceOptions,
  secretOutputs: string[],
): pulumi.CustomResourceOptions {
  return secretOutputs.length === 0
    ? opts
    : pulumi.mergeOptions(opts, { additionalSecretOutputs: secretOutputs });
}

/** Wraps a sensitive input in a secret, leaving an absent one absent. */
export function secretInput<T>(value: pulumi.Input<T> | undefined): pulumi.Input<T> | undefined {
  return value === undefined ? undefined : (pulumi.secret(value) as pulumi.Input<T>);
}

/** Calls an invoke in its Output form with the package defaults. */
export function invokeOutput<T>(
  token: string,
  args: pulumi.Inputs,
  opts: pulumi.InvokeOutputOptions | undefined,
): pulumi.Output<T> {
  return pulumi.runtime.invokeOutput(
    token,
    args,
    pulumi.mergeOptions(resourceOptsDefaults(), opts ?? {}),
  );
}

/** Calls an invoke in its Promise form with the package defaults. */
export function invoke<T>(
  token: string,
  args: pulumi.Inputs,
  opts: pulumi.InvokeOptions | undefined,
): Promise<T> {
  return pulumi.runtime.invoke(
    token,
    args,
    pulumi.mergeOptions(resourceOptsDefaults(), opts ?? {}),
  );
}
