#!/usr/bin/env python3
"""Writes near_pairs.tsv: the labelled set the result cache's near-duplicate
match is measured on (tests/unit/core/cache/near_duplicate_test.cpp,
docs/cache.md). Each line: label (1: the same request, 0: a different one),
category, prompt a, prompt b, tab-separated.

Deterministic (seeded): run it again after changing it and commit both.
  python3 tests/data/make_near_pairs.py > tests/data/near_pairs.tsv
"""
import random

rng = random.Random(44)

QUESTIONS = [
    "What is the capital of France?",
    "How many moons does Jupiter have?",
    "Explain how a hash table handles collisions.",
    "Write a haiku about autumn leaves falling.",
    "What is the boiling point of water at sea level?",
    "Summarize the plot of Hamlet in three sentences.",
    "Convert 100 degrees Celsius to Fahrenheit.",
    "What does the HTTP status code 429 mean?",
    "List the planets of the solar system in order.",
    "Translate good morning into Spanish.",
    "Who wrote the novel Pride and Prejudice?",
    "How do I reverse a linked list in Python?",
    "What are the main causes of inflation?",
    "Give me a recipe for pancakes without eggs.",
    "Why is the sky blue during the day?",
    "What is the difference between TCP and UDP?",
    "How does photosynthesis produce oxygen?",
    "Explain the theory of relativity simply.",
    "What is the population of Tokyo in 2020?",
    "Recommend three books about machine learning.",
    "How long should I boil an egg for a soft yolk?",
    "What is the time complexity of quicksort?",
    "Describe the water cycle for a ten year old.",
    "What is the tallest mountain in Africa?",
    "How do vaccines train the immune system?",
    "Write a SQL query that counts orders per customer.",
    "What is the speed of light in a vacuum?",
    "Explain what a Kubernetes pod is.",
    "How many bones are in the adult human body?",
    "What causes the seasons on Earth?",
    "Summarize the following support ticket: the customer reports that invoices generated after the March update show the wrong tax rate for orders shipped to Germany, and asks for corrected invoices for all affected orders.",
    "Answer using the context. Context: The warranty covers manufacturing defects for 24 months from the date of purchase and excludes damage caused by water, drops or unauthorised repairs. Question: does the warranty cover a cracked screen after a drop?",
    "Classify the sentiment of this review: the battery lasts all day, the screen is bright, but the speakers are disappointing and the charger broke after a week.",
    "Extract the dates from this email: the kickoff meeting moved from the 4th of June to the 11th of June, and the design review is now on the 2nd of July.",
    "Given the function def add(a, b): return a + b, write a unit test for it.",
    "What is 17 times 23?",
    "Is it safe to mix bleach and ammonia?",
    "Should I use a mutex or an atomic for a counter shared by threads?",
    "Compare the climates of Norway and Portugal.",
    "What year did the Berlin Wall fall?",
]

# Hand-written rewordings: the same request in other words (label 1). The
# near match is not built to find these (the semantic mode is): they measure
# its recall honestly.
PARAPHRASES = [
    ("How tall is Mount Everest?", "What is the height of Mount Everest?"),
    ("What is the capital of France?", "Which city is the capital of France?"),
    ("Who wrote Pride and Prejudice?", "Who is the author of Pride and Prejudice?"),
    ("How many moons does Jupiter have?", "What is the number of moons of Jupiter?"),
    ("Translate good morning into Spanish.", "How do you say good morning in Spanish?"),
    ("What year did the Berlin Wall fall?", "When did the Berlin Wall come down?"),
    ("Explain what a Kubernetes pod is.", "What is a pod in Kubernetes?"),
    ("Why is the sky blue during the day?", "What makes the daytime sky blue?"),
    ("Give me a recipe for pancakes without eggs.", "How do I make eggless pancakes?"),
    ("What is the speed of light in a vacuum?", "How fast does light travel in a vacuum?"),
    ("List the planets of the solar system in order.", "Name the solar system's planets in order."),
    ("What causes the seasons on Earth?", "Why does Earth have seasons?"),
    ("How many bones are in the adult human body?", "How many bones does an adult human have?"),
    ("What is 17 times 23?", "Multiply 17 by 23."),
    ("What is the tallest mountain in Africa?", "Which mountain in Africa is the highest?"),
]

# Pairs that look alike and ask different things (label 0).
LOOKALIKES = [
    ("What is the capital of France?", "What is the capital of Spain?"),
    ("What is the capital of France?", "What is the population of France?"),
    ("Convert 100 degrees Celsius to Fahrenheit.", "Convert 100 degrees Fahrenheit to Celsius."),
    ("Is it safe to mix bleach and ammonia?", "Is it unsafe to mix bleach and ammonia?"),
    ("Is it safe to mix bleach and ammonia?", "Is it safe to mix bleach and vinegar?"),
    ("What is 17 times 23?", "What is 17 plus 23?"),
    ("What is 2+3?", "What is 2-3?"),
    ("What is 2*3?", "What is 2/3?"),
    ("Is x > 0 here?", "Is x < 0 here?"),
    ("Write f(a+b)*c in Python.", "Write f(a)+b*c in Python."),
    ("Should I use a mutex or an atomic for a counter shared by threads?",
     "Should I use an atomic or a mutex for a counter shared by processes?"),
    ("How do I reverse a linked list in Python?", "How do I reverse a linked list in Java?"),
    ("How do I reverse a linked list in Python?", "How do I sort a linked list in Python?"),
    ("What is the time complexity of quicksort?", "What is the space complexity of quicksort?"),
    ("What is the time complexity of quicksort?", "What is the time complexity of mergesort?"),
    ("Why is the sky blue during the day?", "Why is the sky red during the sunset?"),
    ("Who wrote the novel Pride and Prejudice?", "Who wrote the novel Sense and Sensibility?"),
    ("The dog bit the man. Who was hurt?", "The man bit the dog. Who was hurt?"),
    ("Sort the list ascending.", "Sort the list descending."),
    ("Did the stock price rise in March?", "Did the stock price fall in March?"),
    ("What happened before the war?", "What happened after the war?"),
    ("Summarize the first chapter.", "Summarize the last chapter."),
    ("Can dogs eat grapes?", "Can cats eat grapes?"),
    ("What was the population of Tokyo in 2020?", "What is the population of Tokyo in 2020?"),
    ("Write a poem about the trial.", "Write a poem about the trail."),
    ("Is the form valid?", "Is the from valid?"),
    ("Describe a casual relationship.", "Describe a causal relationship."),
    ("Pay the invoice now.", "Do not pay the invoice now."),
    ("I want to buy the stock.", "I want to sell the stock."),
    ("Turn the heater on.", "Turn the heater off."),
    # Long prompts where one word changed or two traded places.
    ("Answer from the log. Log: the deploy started at noon, the database migration ran first, then the web tier "
     "restarted, the cache warmed up within five minutes and the error rate stayed flat. Question: what ran first?",
     "Answer from the log. Log: the deploy started at noon, the web tier migration ran first, then the database "
     "restarted, the cache warmed up within five minutes and the error rate stayed flat. Question: what ran first?"),
    ("Summarize the following support ticket: the customer reports that invoices generated after the March update "
     "show the wrong tax rate for orders shipped to Germany, and asks for corrected invoices for all affected orders.",
     "Summarize the following support ticket: the customer reports that invoices generated before the March update "
     "show the wrong tax rate for orders shipped to Germany, and asks for corrected invoices for all affected orders."),
    ("Extract the dates from this email: the kickoff meeting moved from the 4th of June to the 11th of June, and "
     "the design review is now on the 2nd of July.",
     "Extract the dates from this email: the kickoff meeting moved from the 11th of June to the 4th of June, and "
     "the design review is now on the 2nd of July."),
    ("Given the context, the landlord must repair the heating and the tenant must pay the water bill. Who pays "
     "the water bill?",
     "Given the context, the tenant must repair the heating and the landlord must pay the water bill. Who pays "
     "the water bill?"),
]

NEGATIONS = [(" is ", " is not "), (" does ", " does not "), (" should ", " should not "), (" can ", " cannot ")]
ENTITIES = [("France", "Germany"), ("Jupiter", "Saturn"), ("Python", "Rust"), ("Tokyo", "Osaka"),
            ("Africa", "Europe"), ("Hamlet", "Macbeth"), ("Spanish", "French"), ("Germany", "Austria"),
            ("Norway", "Sweden"), ("March", "April"), ("June", "July"), ("water", "oil"), ("TCP", "QUIC"),
            ("customer", "supplier"), ("orders", "returns"), ("invoices", "receipts"), ("battery", "camera")]
FILLERS_BEFORE = ["Please ", "Hi! ", "Hey, ", "Can you tell me: ", "Quick question: ", "Could you please "]
FILLERS_AFTER = [" Thanks!", " Please.", " thank you", " ok?"]


def lower_first(s):
    return s[0].lower() + s[1:]


def typo(s):
    words = s.split(" ")
    long = [i for i, w in enumerate(words) if len(w.strip("?.,!:")) >= 7 and w.strip("?.,!:").isalpha()]
    if not long:
        return None
    i = rng.choice(long)
    w = words[i].strip("?.,!:")
    tail = words[i][len(w):]
    j = rng.randrange(1, len(w) - 2)
    if rng.random() < 0.5:
        w = w[:j] + w[j + 1] + w[j] + w[j + 2:]  # adjacent swap
    else:
        w = w[:j] + w[j] + w[j:]  # a letter doubled
    words[i] = w + tail
    return " ".join(words)


def surface(q):
    """Same request, written differently: (category, text) or None."""
    kind = rng.choice(["case", "punct", "space", "filler", "contraction", "typo", "article"])
    if kind == "case":
        return kind, rng.choice([q.lower(), q.upper(), lower_first(q)])
    if kind == "punct":
        return kind, q.rstrip("?.!") + rng.choice(["", "??", "!", " ?"])
    if kind == "space":
        return kind, "  " + q.replace(" ", rng.choice(["  ", "\n", " \t "]), 2) + "\n"
    if kind == "filler":
        return kind, rng.choice(FILLERS_BEFORE) + lower_first(q) + (rng.choice(FILLERS_AFTER) if rng.random() < 0.5 else "")
    if kind == "contraction":
        for a, b in [("What is", "What's"), ("does not", "doesn't"), ("do not", "don't"), ("How is", "How's"),
                     ("is not", "isn't"), ("Who is", "Who's")]:
            if a in q:
                return kind, q.replace(a, b, 1)
        return "filler", "Please " + lower_first(q)
    if kind == "typo":
        t = typo(q)
        return ("typo", t) if t else ("case", q.lower())
    if kind == "article":
        if " the " in q:
            return kind, q.replace(" the ", " ", 1)
        return "punct", q.rstrip("?.!")
    return None


def different(q):
    """A different request that looks like q: (category, text) or None."""
    kinds = ["number", "negation", "entity", "word"]
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "number":
            digits = [i for i, c in enumerate(q) if c.isdigit()]
            if digits:
                i = rng.choice(digits)
                return kind, q[:i] + str((int(q[i]) + rng.randrange(1, 9)) % 10) + q[i + 1:]
        if kind == "negation":
            for a, b in NEGATIONS:
                if a in q:
                    return kind, q.replace(a, b, 1)
        if kind == "entity":
            for a, b in ENTITIES:
                if a in q:
                    return kind, q.replace(a, b, 1)
        if kind == "word":
            words = q.split(" ")
            content = [i for i, w in enumerate(words) if len(w.strip("?.,!:")) >= 4 and w.strip("?.,!:").isalpha()]
            if content:
                i = rng.choice(content)
                replacement = rng.choice(["river", "engine", "garden", "payment", "window", "history", "protein"])
                tail = words[i][len(words[i].rstrip("?.,!:")):]
                words[i] = replacement + tail
                return kind, " ".join(words)
    return None


def escape(text):
    """Newlines and tabs as \\n and \\t: one pair a line, four fields."""
    assert "\\" not in text
    return text.replace("\n", "\\n").replace("\t", "\\t")


rows = []
for q in QUESTIONS:
    for _ in range(3):
        s = surface(q)
        if s:
            rows.append((1, s[0], q, s[1]))
    for _ in range(3):
        d = different(q)
        if d and d[1] != q:
            rows.append((0, d[0], q, d[1]))
    # A different request, itself written differently.
    d = different(q)
    s = surface(d[1]) if d else None
    if s:
        rows.append((0, d[0] + "+" + s[0], q, s[1]))
for a, b in PARAPHRASES:
    rows.append((1, "paraphrase", a, b))
for a, b in LOOKALIKES:
    rows.append((0, "lookalike", a, b))

seen = set()
print("# label\tcategory\ta\tb  (tests/data/make_near_pairs.py; 1: the same request, 0: a different one)")
for label, category, a, b in rows:
    if (a, b) in seen:
        continue
    seen.add((a, b))
    print(f"{label}\t{category}\t{escape(a)}\t{escape(b)}")
