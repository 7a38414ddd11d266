/** The channel cases (Meta: WhatsApp, Instagram, Messenger; Twilio Messaging), one test file: test/helpers/cases.ts. */
// First: form-window waits for a real form timeout, and the minimum is read when src/ loads.
import '../helpers/short-form-timeouts';
import { runCases } from '../helpers/cases';

runCases(__dirname);
