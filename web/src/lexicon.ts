// Interpretable feature embeddings: every dimension has a name, so matrix columns
// can be labelled. Part-of-speech dimensions hold 1; topic dimensions hold up to 2,
// so that in the parameter-free mode (Q = K = V = X) words sharing a topic attend
// to each other (train with station, check with cashed and bank).

export const FEATURES = [
  "noun", "verb", "determiner", "adjective", "preposition", "pronoun",
  "transport", "place", "time", "money", "animal", "food",
  "motion", "person", "object", "nature",
] as const;
export type Feature = (typeof FEATURES)[number];

const ABBREV: Record<string, Feature> = {
  n: "noun", v: "verb", det: "determiner", adj: "adjective", prep: "preposition", pron: "pronoun",
};

// word: "pos topic:weight ..." (weight defaults to 1 for part of speech, 2 for topics).
const ENTRIES: Record<string, string> = {
  // determiners, pronouns, function words
  the: "det", a: "det", an: "det", this: "det", that: "det pron:0.5", these: "det", those: "det",
  some: "det", every: "det", each: "det", no: "det", my: "det pron:0.5 person:1", your: "det pron:0.5 person:1",
  his: "det pron:0.5 person:1", her: "det pron:0.5 person:1", its: "det pron:0.5", our: "det pron:0.5 person:1",
  their: "det pron:0.5 person:1",
  i: "pron person", you: "pron person", he: "pron person", she: "pron person", it: "pron object:1",
  we: "pron person", they: "pron person", me: "pron person", him: "pron person", them: "pron person",
  us: "pron person", who: "pron person:1", what: "pron", which: "pron",
  at: "prep place:1", on: "prep time:1 place:1", in: "prep place:1 time:1", to: "prep motion:1", from: "prep motion:1",
  of: "prep", for: "prep", with: "prep", by: "prep", over: "prep motion:1 place:1", under: "prep place:1",
  into: "prep motion:1 place:1", through: "prep motion:1", after: "prep time:2", before: "prep time:2",
  during: "prep time:2", near: "prep place:2", across: "prep motion:1 place:1", like: "prep:0.5 v:0.5",
  and: "prep:0.5", or: "prep:0.5", but: "prep:0.5", as: "prep:0.5", than: "prep:0.5",
  is: "v:0.5", are: "v:0.5", was: "v:0.5", were: "v:0.5", be: "v:0.5", been: "v:0.5", has: "v:0.5",
  have: "v:0.5", had: "v:0.5", will: "v:0.5 time:1", can: "v:0.5", not: "adj:0.5", very: "adj:0.5",
  new: "adj time:1", old: "adj time:1", list: "n v object:1", ideas: "n object:1", song: "n object:1",
  // seed 003: the train left the station on time / I cashed the check at the bank
  train: "n transport motion:1", station: "n transport place", left: "v motion place:1", time: "n time",
  cashed: "v money", check: "n money object:1", bank: "n money place", cash: "n money",
  // seed 000: time flies like an arrow / fruit flies like a banana
  flies: "v n:0.5 motion animal:1", fly: "v n:0.5 motion animal:1", arrow: "n object motion:1",
  fruit: "n food nature:1", banana: "n food nature:1", apple: "n food nature:1",
  // seed 001: The quick brown fox jumped over the lazy dog
  quick: "adj motion:1", brown: "adj nature:1", fox: "n animal nature:1", jumped: "v motion",
  jumps: "v motion", jump: "v motion", lazy: "adj person:1", dog: "n animal", cat: "n animal",
  // transport and places
  bus: "n transport", car: "n transport", plane: "n transport", ship: "n transport", boat: "n transport",
  bike: "n transport", ticket: "n transport:1 money:1 object:1", platform: "n transport place",
  airport: "n transport place", road: "n transport:1 place", city: "n place", town: "n place",
  home: "n place", house: "n place object:1", street: "n place", park: "n place nature:1",
  river: "n place:1 nature", school: "n place person:1", shop: "n place money:1", store: "n place money:1",
  office: "n place", room: "n place", country: "n place", world: "n place nature:1",
  arrived: "v motion place:1", departed: "v motion", went: "v motion", go: "v motion", came: "v motion",
  drove: "v transport:1 motion", ran: "v motion", walked: "v motion", travelled: "v motion transport:1",
  // time
  day: "n time", night: "n time", morning: "n time", evening: "n time", week: "n time",
  year: "n time", hour: "n time", minute: "n time", today: "n time", tomorrow: "n time",
  yesterday: "n time", late: "adj time", early: "adj time", now: "adj:0.5 time", then: "adj:0.5 time",
  // money
  money: "n money", paid: "v money", pay: "v money", bought: "v money", buy: "v money",
  sold: "v money", price: "n money", loan: "n money", account: "n money", deposit: "n v money",
  dollar: "n money", dollars: "n money", coin: "n money object:1", cheque: "n money object:1",
  // animals, food, nature
  bird: "n animal nature:1", fish: "n animal food:1", horse: "n animal transport:1", cow: "n animal food:1",
  bread: "n food", cake: "n food", milk: "n food", water: "n nature food:1", ate: "v food", eat: "v food",
  tree: "n nature", sky: "n nature", sun: "n nature time:1", rain: "n nature", sea: "n nature place:1",
  // people and objects
  man: "n person", woman: "n person", child: "n person", people: "n person", teacher: "n person",
  friend: "n person", driver: "n person transport:1", book: "n object", letter: "n object",
  phone: "n object", table: "n object", door: "n object place:1", key: "n object", box: "n object",
  // verbs
  saw: "v object:1", see: "v", read: "v object:1", wrote: "v object:1", gave: "v object:1", took: "v object:1",
  made: "v object:1", said: "v person:1", told: "v person:1", met: "v person:1", opened: "v object:1",
  // adjectives
  big: "adj", small: "adj", good: "adj", bad: "adj", red: "adj nature:1", green: "adj nature:1",
  blue: "adj nature:1", fast: "adj motion", slow: "adj motion", happy: "adj person:1",
};

/** Feature weights of a lexicon word, or undefined if the word is unknown. */
export function lookup(word: string): Float32Array | undefined {
  const spec = ENTRIES[word.toLowerCase()];
  if (spec === undefined || !Object.prototype.hasOwnProperty.call(ENTRIES, word.toLowerCase())) return undefined;
  const v = new Float32Array(FEATURES.length);
  for (const part of spec.split(/\s+/)) {
    const [name, w] = part.split(":");
    const feature = ABBREV[name] ?? (name as Feature);
    const index = FEATURES.indexOf(feature);
    if (index < 0) throw new Error(`lexicon: unknown feature ${name} in "${word}"`);
    v[index] = w !== undefined ? Number(w) : index < 6 ? 1 : 2;
  }
  return v;
}

export const LEXICON_SIZE = Object.keys(ENTRIES).length;
