"""What a board shows, read across the domain apps (todos, planmode): session summaries, agent
cards and history (`selectors`), and the sweep that ends sessions gone quiet (`idle`).

Above the domain apps, below live delivery and the pages, which both render from here.
"""
