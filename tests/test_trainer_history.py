"""The hybrid's member history: its file, leave-one-out features, the mixture, the references."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from trainer import encoded, part_counts
from trainer.data import generate
from trainer.features import UNKNOWN_MEMBER, read_catalogue
from trainer.history import HistoryFormatError, MemberHistory, history_features
from trainer.metrics import SEGMENTS, segment_masks
from trainer.model import CatalogueTensors, DrinkRecommender, ModelConfig, score
from trainer.reference import count_training_rows
from trainer.split import make_time_split
from trainer.world import WorldConfig

COUNTS = np.array([[0, 0, 0, 0], [5, 0, 1, 0], [0, 2, 0, 40_000]])  # members 0 (unknown), 1, 2


def test_member_history_round_trips_through_its_sparse_file() -> None:
    history = MemberHistory.from_counts(COUNTS)
    assert history.counts.dtype == np.int16 and history.counts[2, 3] == 32_767  # clipped
    loaded = MemberHistory.from_bytes(history.to_bytes(), n_members=2, n_drinks=4)
    assert np.array_equal(loaded.counts, history.counts)
    sparse = MemberHistory(np.eye(1001, 96, dtype=np.int16)).to_bytes()
    assert len(sparse) < np.zeros((1001, 96), np.int16).nbytes / 4


@pytest.mark.parametrize(
    ("members", "drinks", "data", "message"),
    [
        (3, 4, None, r"shape \[3, 4\], expected \[4, 4\]"),
        (2, 5, None, "expected"),
        (2, 4, b"not a zip", "not a history file"),
    ],
)
def test_member_history_refuses_a_file_of_another_shape(
    members: int, drinks: int, data: bytes | None, message: str
) -> None:
    payload = MemberHistory.from_counts(COUNTS).to_bytes() if data is None else data
    with pytest.raises(HistoryFormatError, match=message):
        MemberHistory.from_bytes(payload, members, drinks)


def test_history_features_leave_the_bought_drink_out_of_training_rows() -> None:
    tensors = MemberHistory.from_counts(COUNTS[:, :3]).tensors(torch.device("cpu"))
    member, candidates = torch.tensor([1, 1, 2]), torch.tensor([0, 1, 2])
    cells, features = history_features(tensors, member, candidates)
    assert cells.tolist() == [0, 2, 3, 5, 7]  # row * 3 + candidate, bought cells only
    assert features[0].tolist() == pytest.approx([np.log1p(5), 5 / 6, np.log1p(6)])
    # Row 0 bought drink 0 (5 -> 4); row 1 drink 2, bought once: its cell 5 disappears.
    cells, features = history_features(tensors, member, candidates, torch.tensor([0, 2, 1]))
    assert cells.tolist() == [0, 2, 3, 7]
    assert features[:, 0].tolist() == pytest.approx(np.log1p([4, 1, 5, 1]).tolist())
    assert features[:, 2].tolist() == pytest.approx(np.log1p([5, 5, 5, 1]).tolist())


def test_model_mixes_history_into_bought_drinks_only() -> None:
    from trainer.features import Catalogue

    catalogue = Catalogue(
        drink_ids=np.arange(4), drink_names=list("abcd"), drink_category=np.zeros(4, np.int64),
        drink_cold=np.zeros(4, np.int64), drink_region=np.full(4, -1),
        drink_launch_day=np.zeros(4, np.int64), store_ids=np.arange(2),
        store_region=np.zeros(2, np.int64), drink_season=np.full(4, -1),
    )  # fmt: skip
    torch.manual_seed(0)
    model = DrinkRecommender(ModelConfig(2, 2, 4, 1, 8, 8, 4)).eval()
    towers = DrinkRecommender(ModelConfig(2, 2, 4, 1, 8, 8, 0)).eval()
    towers.load_state_dict(model.state_dict(), strict=False)
    device = torch.device("cpu")
    cat = CatalogueTensors.build(catalogue, None, device, MemberHistory.from_counts(COUNTS))
    batch = {k: torch.tensor([1, 2]) for k in ("member", "hour", "weekday", "season")}
    batch.update(store=torch.tensor([0, 1]), day=torch.tensor([10, 10]))
    with torch.no_grad():
        mixed, _ = score(model, cat, batch, torch.arange(4))
        plain, _ = score(towers, CatalogueTensors.build(catalogue, None, device), batch,
                         torch.arange(4))  # fmt: skip
    bought = torch.as_tensor(COUNTS[1:] > 0)
    assert torch.equal(mixed[~bought], plain[~bought])
    assert (mixed[bought] > plain[bought]).all()  # log(e^t + e^g) > t
    with pytest.raises(ValueError, match="history head"):
        score(model, CatalogueTensors.build(catalogue, None, device), batch, torch.arange(4))


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("history")
    generate(WorldConfig(members=200, stores=8, weeks=7, seed=6), root / "data")
    loaded: dict[str, object] = make_time_split(str(root / "data"), str(root / "split"))
    return loaded


def test_reference_counts_stream_what_the_encoded_rows_count(
    manifest: dict, tmp_path: Path
) -> None:
    catalogue = read_catalogue(manifest)
    data = encoded.load_or_build(manifest, catalogue, tmp_path)
    n_stores, n_drinks = catalogue.store_ids.size, catalogue.drink_ids.size
    vocab = data.member_vocab
    counts = count_training_rows(manifest, vocab, catalogue, 3)
    assert counts.rows == len(data.train)
    assert np.array_equal(
        counts.popularity, part_counts.store_popularity(data.train, n_stores, n_drinks, 3)
    )
    assert np.array_equal(
        counts.member_counts, part_counts.member_counts(data.train, vocab.size, n_drinks)
    )
    # Members another model does not know stay out of the table (row 0 stays empty).
    fewer = count_training_rows(manifest, vocab[::2], catalogue, 3).member_counts
    assert not fewer[UNKNOWN_MEMBER].any()
    assert np.array_equal(fewer[1:], counts.member_counts[1::2])


def test_segment_masks_find_habitual_and_new_members_and_new_drinks() -> None:
    from trainer.features import Catalogue

    catalogue = Catalogue(
        drink_ids=np.arange(5), drink_names=list("abcde"), drink_category=np.zeros(5, np.int64),
        drink_cold=np.zeros(5, np.int64), drink_region=np.full(5, -1),
        drink_launch_day=np.array([0, 0, 0, 0, 90]), store_ids=np.arange(1),
        store_region=np.zeros(1, np.int64), drink_season=np.full(5, -1),
    )  # fmt: skip
    cat = CatalogueTensors.build(catalogue, None, torch.device("cpu"))
    counts = torch.tensor([[0, 0, 0, 0, 0], [8, 1, 0, 0, 1], [2, 2, 2, 2, 2]])
    batch = {"member": torch.tensor([1, 2, 0, 1]), "day": torch.tensor([100, 100, 100, 200]),
             "drink": torch.tensor([0, 4, 1, 4])}  # fmt: skip
    masks = segment_masks(cat, batch, counts)
    assert SEGMENTS == ("habitual", "new_drinks", "other", "old_drinks", "new_members")
    assert masks.tolist() == [
        [True, False, False, True, False],  # top three = 10 of 10 purchases
        [False, True, False, False, False],  # top three = 6 of 10; drink 4 launched 10 days ago
        [False, False, True, True, True],  # unknown member
        [True, False, False, True, False],  # drink 4 launched 110 days earlier: no longer new
    ]
