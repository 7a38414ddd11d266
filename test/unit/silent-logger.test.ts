/**
 * A 'silent' logger (the tests' apps, LOG_LEVEL=silent) opens no output stream, so it starts
 * no flush timer, which would run for the rest of the process after its app is gone
 * (src/logger.ts).
 */
import { bufferedDestination, createLogger } from '../../src/logger';

describe('createLogger', () => {
  // Fake timers: the buffered stream's flush timer is counted, never left running.
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it("starts no timer at 'silent'; the buffered stream starts one to flush", () => {
    const setInterval = jest.spyOn(global, 'setInterval');
    createLogger('silent').error('nobody hears this');
    expect(setInterval).not.toHaveBeenCalled();

    createLogger('info', bufferedDestination('/dev/null')).info('to /dev/null');
    expect(setInterval).toHaveBeenCalledTimes(1);
  });
});
