export {
  getConfiguration,
  getConfigurationOutput,
  GetConfigurationArgs,
  GetConfigurationOutputArgs,
  GetConfigurationResult,
} from "./getConfiguration";
