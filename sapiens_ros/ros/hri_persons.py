# Copyright 2026 sapiens_ros contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
REP-155 (ROS4HRI) persons: ``/humans/persons/tracked`` and one namespace per person.

The world fusion (``core.people.world``) makes persons from every camera's bodies;
:class:`HriPersons` publishes them as REP-155 has it:

- ``/humans/persons/tracked`` and ``/humans/persons/known`` (``hri_msgs/IdsList``, the same
  list: a person is known while tracked);
- per person, latched (transient local): ``/humans/persons/<id>/body_id`` (``String``, the
  body that sees them best now; sent when it changes), ``anonymous`` (``Bool``, always true:
  nobody is recognised) and ``location_confidence`` (``Float32``, sent when it moves by 0.05);
- ``/humans/candidate_matches`` (``hri_msgs/IdsMatch``): each body <-> person link with its
  confidence, when a link is new and then at most once a second.

A person's topics live while the person does; the ``person_<id>`` TF frame comes from
``people_world``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rclpy.node import Node
from std_msgs.msg import Bool, Float32, Header, String

from .hri_lists import destroyable_publisher, HRI_MSGS_ERROR, IdsList, IdsMatch
from .qos import HRI_LATCHED_QOS, HRI_MATCHES_QOS, HRI_QOS
from ..core.people.world import WorldPerson

#: REP-155's person namespace (global).
PERSONS_NS = '/humans/persons'
#: REP-155's matches topic (global).
MATCHES_TOPIC = '/humans/candidate_matches'
#: A match is re-sent this often (s) while it holds.
MATCH_PERIOD_S = 1.0
#: location_confidence is re-sent when it changes by more than this.
CONFIDENCE_STEP = 0.05


@dataclass
class _Person:
    body_id: object
    anonymous: object
    confidence: object
    sent_body: str | None = None
    sent_confidence: float | None = None


class MatchPacer:
    """Which body <-> person matches are due: new links, then once per ``period`` (stamp s)."""

    def __init__(self, period: float = MATCH_PERIOD_S) -> None:
        self.period = period
        self._sent: dict[tuple[str, str], float] = {}

    def due(self, persons: list[WorldPerson], now: float) -> list:
        """Return the ``IdsMatch`` messages to send now (and note them as sent)."""
        out = []
        live = set()
        for person in persons:
            for link in person.bodies:
                key = (link.body_id, person.person_id)
                live.add(key)
                sent = self._sent.get(key)
                if sent is None or now - sent >= self.period or now < sent:
                    out.append(IdsMatch(id1=link.body_id, id1_type=IdsMatch.BODY,
                                        id2=person.person_id, id2_type=IdsMatch.PERSON,
                                        confidence=float(link.confidence)))
                    self._sent[key] = now
        self._sent = {k: v for k, v in self._sent.items() if k in live}
        return out


class HriPersons:
    """Publishes the world's persons for REP-155; call :meth:`update` after each fusion."""

    def __init__(self, node: Node) -> None:
        if HRI_MSGS_ERROR is not None:
            raise RuntimeError(f'hri_msgs is not available ({HRI_MSGS_ERROR})')
        self._node = node
        self._persons: dict[str, _Person] = {}
        self._tracked = destroyable_publisher(node, IdsList, f'{PERSONS_NS}/tracked', HRI_QOS)
        self._known = destroyable_publisher(node, IdsList, f'{PERSONS_NS}/known', HRI_QOS)
        self._matches = destroyable_publisher(node, IdsMatch, MATCHES_TOPIC, HRI_MATCHES_QOS)
        self._pacer = MatchPacer()

    @property
    def persons(self) -> list[str]:
        """Return the person ids with topics."""
        return list(self._persons)

    def update(self, header: Header, persons: list[WorldPerson], now: float) -> None:
        """
        Publish the persons of the world now (``header``: world frame, fused stamp).

        ``now`` (s, the fused stamp) paces the matches.
        """
        live = {p.person_id for p in persons}
        for name in [n for n in self._persons if n not in live]:
            self._drop(name)
        for person in persons:
            state = self._persons.get(person.person_id)
            if state is None:
                state = self._persons[person.person_id] = self._create(person.person_id)
                state.anonymous.publish(Bool(data=True))
            best = person.best_body
            if best is not None and best.body_id != state.sent_body:
                state.body_id.publish(String(data=best.body_id))
                state.sent_body = best.body_id
            conf = person.location_confidence
            if state.sent_confidence is None or abs(conf - state.sent_confidence) > \
                    CONFIDENCE_STEP:
                state.confidence.publish(Float32(data=float(conf)))
                state.sent_confidence = conf
        for match in self._pacer.due(persons, now):
            self._matches.publish(match)
        ids = [p.person_id for p in persons]
        self._tracked.publish(IdsList(header=header, ids=ids))
        self._known.publish(IdsList(header=header, ids=ids))

    def close(self) -> None:
        """Publish empty lists and destroy every publisher."""
        for name in list(self._persons):
            self._drop(name)
        for pub in (self._tracked, self._known):
            pub.publish(IdsList(header=Header(), ids=[]))
            self._node.destroy_publisher(pub)
        self._node.destroy_publisher(self._matches)

    def _create(self, name: str) -> _Person:
        ns = f'{PERSONS_NS}/{name}'
        return _Person(*(destroyable_publisher(self._node, t, f'{ns}/{topic}', HRI_LATCHED_QOS)
                         for t, topic in ((String, 'body_id'), (Bool, 'anonymous'),
                                          (Float32, 'location_confidence'))))

    def _drop(self, name: str) -> None:
        state = self._persons.pop(name)
        for pub in (state.body_id, state.anonymous, state.confidence):
            self._node.destroy_publisher(pub)


__all__ = ['MATCHES_TOPIC', 'PERSONS_NS', 'HriPersons', 'MatchPacer']
