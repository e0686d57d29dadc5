/**
 * The id of a webhook delivery, derived from its event and endpoint
 * (docs/decisions.md#deliveries-owed-by-the-event-log): an owed delivery, its record and its place in a batch of
 * first-attempt successes all go by it.
 */

/** The value of the lower-case hex digit with char code `c`, or -1. */
const hexDigit = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1);
const HEX = '0123456789abcdef';
/** Where {@link deliveryIdOf} builds an id: its 36 latin1 bytes, read back as one flat string. */
const idBytes = Buffer.alloc(36);

/**
 * The id of the delivery of event `eventId` to endpoint `endpointId` (both UUIDv7 as the server makes them): the event
 * id with its last 48 bits — random bits in a UUIDv7 — XORed with the endpoint id's last 48. For one endpoint this is a
 * one-to-one map of event ids, so its deliveries' ids are distinct; two endpoints' ids differ in those bits but with
 * probability 2⁻⁴⁸. The id keeps the event's time, so deliveries sort with their events. Ids of another shape (none the
 * server makes) fall back to a text join, still distinct per pair.
 */
export function deliveryIdOf(eventId: string, endpointId: string): string {
  // XOR of the 48-bit numbers is XOR of their hex digits, one by one. Built in a byte buffer and read as one string: a
  // concatenation would be a tree of string parts, kept as long as the id (in every index it is in) unless the
  // collector flattens it.
  if (eventId.length !== 36 || endpointId.length !== 36 || eventId.charCodeAt(23) !== 45 ||
    endpointId.charCodeAt(23) !== 45) return `${eventId}.${endpointId}`;
  for (let i = 24; i < 36; i++) {
    const a = hexDigit(eventId.charCodeAt(i));
    const b = hexDigit(endpointId.charCodeAt(i));
    if (a < 0 || b < 0) return `${eventId}.${endpointId}`;
    idBytes[i] = HEX.charCodeAt(a ^ b);
  }
  for (let i = 0; i < 24; i++) {
    const c = eventId.charCodeAt(i);
    // Not one byte (no id the server makes): the event's part as it is.
    if (c > 0xff) return eventId.slice(0, 24) + idBytes.toString('latin1', 24, 36);
    idBytes[i] = c;
  }
  return idBytes.toString('latin1', 0, 36);
}
