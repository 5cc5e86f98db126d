/**
 * Look-alikes of a live `lead` that registered as new names in the same
 * context before names were compared by UTS #39 skeleton and
 * default-ignorable code points refused: the table test of agent names and
 * the names fuzz corpus both use them.
 */
export const LEAD_LOOK_ALIKES: [string, string][] = [
  ['\u04cf\u0435\u0430\u0501', 'all Cyrillic (palochka, ie, a, komi de)'],
  ['\u01c0ead', 'U+01C0 dental click'],
  ['\u13deead', 'Cherokee TLE'],
  ['\ua4e1ead', 'Lisu LA'],
  ['\u029f\u1d07\u1d00\u1d05', 'small capitals'],
  ['Iead', 'capital I'],
  ['1ead', 'digit one'],
  ['lead\u034f', 'U+034F combining grapheme joiner'],
  ['lead\ufe0f', 'U+FE0F variation selector 16'],
  ['lead\u180b', 'U+180B Mongolian free variation selector'],
  ['lead\u17b4', 'U+17B4 Khmer inherent vowel'],
  ['lead\u115f', 'U+115F Hangul choseong filler'],
  ['lead\u1160', 'U+1160 Hangul jungseong filler'],
  ['lead\u3164', 'U+3164 Hangul filler'],
  ['lead\uffa0', 'U+FFA0 half-width Hangul filler'],
  ['lead\u2800', 'U+2800 Braille pattern blank'],
];
