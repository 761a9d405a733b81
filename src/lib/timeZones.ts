/** IANA time zone names, as the runtime's ICU data knows them (RFC 9557 §4.1 names). */

/** Whether `name` is a time zone `Intl` can compute calendar windows in. */
export function isTimeZoneName(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
