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
 * Reads the foundation's outputs through a StackReference on the same backend. `read()` waits for them
 * and fails with a clear message, not a missing-property error deep in a provider, when the foundation
 * stack is missing or has no outputs yet, so the app layer can stop before it registers anything else.
 */
export class FoundationReference extends pulumi.ComponentResource {
  private readonly reference: pulumi.StackReference;

  constructor(
    name: string,
    private readonly args: { stack: string; environment: string },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:app:FoundationReference", name, {}, opts);
    this.reference = new pulumi.StackReference(
      `${name}-stack`,
      { name: args.stack },
      { parent: this },
    );
    this.registerOutputs({});
  }

  /** The foundation's values; secret outputs stay secret. Rejects with a RunError when there are none. */
  async read(): Promise<pulumi.Output<FoundationValues>> {
    const { stack, environment } = this.args;
    // The reference comes from talos-platform-app:foundationStack (or its default), so a wrong one
    // is named by that key.
    const fix =
      `Run \`npm run platform -- up ${environment}\` (the foundation layer), then retry; if the ` +
      `foundation is another stack, set talos-platform-app:foundationStack ` +
      `(organization/project/stack) in app/Pulumi.${environment}.yaml.`;
    const key = "talos-platform-app:foundationStack";
    let details: pulumi.StackReferenceOutputDetails[];
    try {
      details = await Promise.all(REQUIRED.map((key) => this.reference.getOutputDetails(key)));
    } catch (error) {
      // The engine fails the read when the stack does not exist (`unknown stack "…"`).
      throw new pulumi.RunError(
        `${key}: foundation stack ${stack} could not be read (${(error as Error).message}); the app layer needs ` +
          `the cluster first. ${fix}`,
      );
    }
    const missing = REQUIRED.filter(
      (_, i) => details[i].value === undefined && details[i].secretValue === undefined,
    );
    if (missing.length > 0) {
      throw new pulumi.RunError(
        `${key}: foundation stack ${stack} has no ${missing.join(", ")} output yet; the app layer needs the ` +
          `cluster first. ${fix}`,
      );
    }
    const value = (i: number) =>
      details[i].secretValue !== undefined
        ? pulumi.secret(details[i].secretValue as string)
        : pulumi.output(details[i].value as string);
    return pulumi
      .all([value(0), value(1), value(2)])
      .apply(([endpoint, kubernetesCaCertificate, clusterName]) => ({
        endpoint,
        kubernetesCaCertificate,
        clusterName,
      }));
  }
}
