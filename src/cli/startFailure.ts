import { ConfigError } from '../config';
import { StartupError } from '../errors';
import { createLogger, type Logger } from '../observability/logger';

/**
 * A failed start of the service or a tool (migrate, relay) as one JSON log line naming what failed and the
 * setting to look at (invalid configuration lists every problem, never a value); the exit code the process
 * should end with.
 */
export function reportStartFailure(error: unknown, logger: Logger = createLogger('info')): number {
  if (error instanceof ConfigError) {
    logger.fatal({ problems: error.problems }, error.message.replace(/\n\s*/g, ' '));
    return 78; // EX_CONFIG
  }
  if (error instanceof StartupError) {
    logger.fatal({ setting: error.setting }, error.message);
    return error.exitCode;
  }
  logger.fatal({ err: error }, `failed to start: ${error instanceof Error ? error.message : String(error)}`);
  return 1;
}
