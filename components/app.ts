// The app layer's program: what needs OpenBao (policies, auth methods, mounts) and Grafana, configured
// against the cluster the foundation built, read through a stack reference. CI previews it on every
// pull request and applies it on main; the foundation never depends on it.
import * as pulumi from "@pulumi/pulumi";
import { GrafanaConfiguration } from "./app/grafana";
import { FoundationReference } from "./app/foundationRef";
import { OpenbaoConfiguration } from "./app/openbao";
import { loadAppConfig } from "./config/appLoad";

/** The app stack's outputs. */
export interface AppOutputs {
  readonly foundationStack: string;
  readonly openbao: {
    policies: string[];
    kubernetesAuthPath: pulumi.Output<string>;
    kvMount: pulumi.Output<string>;
  };
  readonly grafana?: { dashboards: Record<string, string[]> };
}

/**
 * Runs the app program for the current stack. The stack file is validated first, then the
 * foundation's outputs are awaited: without them nothing of OpenBao or Grafana is registered.
 */
export async function appLayer(): Promise<AppOutputs> {
  const { spec, secrets } = loadAppConfig();
  const foundation = await new FoundationReference("foundation", {
    stack: spec.foundationStack,
    environment: pulumi.getStack(),
    ...(spec.foundationSource === "published"
      ? { publishedIn: new pulumi.Config("talos-platform-app").require("backend") }
      : {}),
  }).read();
  const openbao = new OpenbaoConfiguration("openbao", {
    settings: spec.openbao,
    secrets,
    foundation,
    stack: pulumi.getStack(),
  });
  const grafana =
    spec.grafana &&
    new GrafanaConfiguration("grafana", { settings: spec.grafana, auth: secrets.grafanaAuth! });
  return {
    foundationStack: spec.foundationStack,
    openbao: {
      policies: openbao.policyNames,
      kubernetesAuthPath: openbao.kubernetesAuthPath,
      kvMount: openbao.kvMount,
    },
    ...(grafana ? { grafana: { dashboards: grafana.dashboards } } : {}),
  };
}
