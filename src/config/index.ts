/**
 * The configuration, read once from the environment at start, by job: what each setting is (settingsSchema.ts), reading
 * and checking them (load.ts), what a valid one may still get wrong (warnings.ts), and what the running service
 * derives from it (runtime.ts).
 */
export {
  adminDoors,
  adminTokens,
  brokerUrl,
  consoleTokens,
  isLoopbackHost,
  journalSettings,
  receivedPos,
  recordingContext,
  writeLanes,
} from './runtime';
export { configurationWarnings, keptStateWarning } from './warnings';
export { loadConfig, loadDotEnv } from './load';
export {
  ConfigError,
  LOOPBACK_SOURCES,
  parseDuration,
  SETTING_VARIABLES,
  type Config,
  type ProcessNeeds,
  type ReconciliationConfig,
} from './settingsSchema';
