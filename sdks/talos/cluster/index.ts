export {
  getHealth,
  getHealthOutput,
  type GetHealthArgs,
  type GetHealthOutputArgs,
  type GetHealthResult,
} from "./getHealth";
export { Kubeconfig, type KubeconfigArgs, type KubeconfigState } from "./kubeconfig";
