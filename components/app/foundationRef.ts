import * as pulumi from "@pulumi/pulumi";

/** What the app layer reads from the foundation stack. */
export interface FoundationValues {
  /** `https://<endpoint>:6443`. */
  readonly endpoint: string;
  /** The Kubernetes API's CA certificate (PEM). */
  readonly kubernetesCaCertificate: string;
  readonly clusterName: string;
}

const REQUIRED = ["endpoint", "kubernetesCaCertificate", "clusterName"] as const;

/**
 * Reads the foundation's outputs through a StackReference on the same backend, and fails with a
 * clear message, not a missing-property error deep in a provider, when the foundation has none yet.
 */
export class FoundationReference extends pulumi.ComponentResource {
  public readonly values: pulumi.Output<FoundationValues>;

  constructor(
    name: string,
    args: { stack: string; environment: string },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:app:FoundationReference", name, {}, opts);
    const reference = new pulumi.StackReference(
      `${name}-stack`,
      { name: args.stack },
      { parent: this },
    );
    this.values = reference.outputs.apply((outputs) => {
      const missing = REQUIRED.filter((key) => outputs?.[key] === undefined);
      if (missing.length > 0) {
        throw new pulumi.RunError(
          `foundation stack ${args.stack} has no ${missing.join(", ")} output yet; the app layer needs the ` +
            `cluster first. Run \`npm run platform -- up ${args.environment}\` (the foundation layer), then retry.`,
        );
      }
      return {
        endpoint: outputs.endpoint as string,
        kubernetesCaCertificate: outputs.kubernetesCaCertificate as string,
        clusterName: outputs.clusterName as string,
      };
    });
    this.registerOutputs({});
  }
}
